#!/usr/bin/env python3
"""docs/internals.md's "Repository layout" against `git ls-files`.

  check_layout.py REPO_DIR

The layout is one ```text block. Each line is NAMES, then two spaces or more and what
they are (a line of description alone continues the one above). Indentation says the
folder: two spaces a level, under the last line whose one name ends in '/'. Among the
NAMES, separated by one space:
  name        a file of the folder (or a path below it: conv/x.c; the names after it on
              its line are then in that path's folder)
  .h          the header of the name before it (net.c .h)
  *.ext       every file the pattern matches in that folder; where the description
              starts with a number, exactly that many
Fails (exit 1) on a tracked file the layout does not list, a listed file that is not
tracked, and a count that does not match; exits 77 (a skip) outside a git checkout.
"""
import fnmatch
import os
import re
import subprocess
import sys


def layout_block(text):
    start = text.index("## Repository layout")
    fence = text.index("```text\n", start) + len("```text\n")
    return text[fence:text.index("```", fence)].splitlines()


def entries(lines):
    """[(line number, path or glob, count or None)] the block lists."""
    out, stack = [], []  # stack: the folders open at each level
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        parts = re.split(r" {2,}", body, maxsplit=1)
        names, desc = parts[0], parts[1] if len(parts) > 1 else ""
        if indent % 2 or indent // 2 > len(stack):
            continue  # a description that runs on
        del stack[indent // 2:]
        folder = "".join(stack)
        tokens = names.split(" ")
        if len(tokens) == 1 and tokens[0].endswith("/"):
            stack.append(tokens[0])
            continue
        line_dir, previous = folder, None
        count = int(desc.split()[0]) if desc and desc.split()[0].isdigit() else None
        for token in tokens:
            if token == ".h" and previous:
                path = re.sub(r"\.[a-z]+$", ".h", previous)
            elif "/" in token:
                path = folder + token
                line_dir = folder + token.rsplit("/", 1)[0] + "/"
            else:
                path = line_dir + token
            out.append((number, path, count if "*" in token else None))
            previous = path
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = argv[1]
    try:
        tracked = subprocess.run(["git", "-C", root, "ls-files"], check=True, text=True,
                                 capture_output=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        print("skipped: not a git checkout (the layout is checked against git ls-files)")
        return 77
    tracked = {t for t in tracked if t}
    with open(os.path.join(root, "docs", "internals.md"), encoding="utf-8") as f:
        lines = layout_block(f.read())
    listed, problems = set(), []
    for number, path, count in entries(lines):
        if "*" in path:
            matched = {t for t in tracked if fnmatch.fnmatch(t, path) and
                       t.count("/") == path.count("/")}
            if not matched:
                problems.append(f"layout line {number}: {path} matches no tracked file")
            if count is not None and len(matched) != count:
                problems.append(f"layout line {number}: {path} says {count} files, "
                                f"git tracks {len(matched)}")
            listed |= matched
        elif path not in tracked:
            problems.append(f"layout line {number}: {path} is not a tracked file")
        else:
            listed.add(path)
    for path in sorted(tracked - listed):
        problems.append(f"{path} is tracked but docs/internals.md's layout does not list it")
    for p in problems:
        print("FAIL " + p)
    print(f"layout: {len(listed)} of {len(tracked)} tracked files listed, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
