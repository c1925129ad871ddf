#!/usr/bin/env python3
"""Checks that the repository's root holds only the entries it should.

The entries are the top-level names of the tracked files (git ls-files) and
of the untracked files that git does not ignore (git ls-files --others
--exclude-standard), less CMake build folders of any name (a CMakeCache.txt
inside). One that is not in EXPECTED fails the check, named, so
that a stray file (an empty file named 0 from a mistyped redirection, a
checkpoint of an interrupted run) is caught before it is committed.
Outside a git checkout the check cannot run: it says so and exits 77 (skip).
usage: check_root.py [REPO_ROOT]"""
import os
import subprocess
import sys

# The repository's top-level files and folders. A new top-level entry is a
# decision: add it here on purpose, in the commit that adds it.
EXPECTED = {
    ".ci",
    ".clang-format",
    ".gitignore",
    "CHANGELOG.md",
    "CMakeLists.txt",
    "README.md",
    "bench",
    "cl",
    "cmake",
    "docs",
    "examples",
    "include",
    "scripts",
    "src",
    "tests",
}
SKIP = 77


def git(root, *args):
    """git's output, or None when git is missing or fails."""
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def main():
    root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else ".")
    top = git(root, "rev-parse", "--show-toplevel")
    if top is None or os.path.realpath(top.decode().strip()) != root:
        print(f"skipped: {root} is not the root of a git checkout, so its entries cannot be told "
              "from build outputs")
        return SKIP
    listing = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if listing is None:
        print(f"check_root: git ls-files failed in {root}")
        return 1
    names = {path.split(b"/")[0].decode(errors="replace") for path in listing.split(b"\0") if path}
    # a build folder of any name (cmake -B out) is the user's, not the repository's
    builds = {n for n in names - EXPECTED if os.path.isfile(os.path.join(root, n, "CMakeCache.txt"))}
    unexpected = sorted(names - EXPECTED - builds)
    if unexpected:
        for name in unexpected:
            print(f"check_root: unexpected entry at the repository root: {name!r}")
        print(f"{len(unexpected)} unexpected; remove it (or ignore it in .gitignore), or add it "
              "to EXPECTED in scripts/check_root.py if it belongs there")
        return 1
    print(f"ok: the {len(names - builds)} root entries are the expected ones"
          + (f" (and the build folders {', '.join(sorted(builds))})" if builds else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
