#!/usr/bin/env python3
"""Checks that the environment variables clnet reads are documented in one table,
and read in one module (src/env.c; src/cli, the program, reads its own).

The table is the "Environment" section of include/clnet.h: one line per
variable, "CLNET_NAME=VALUE  meaning". Every variable the sources read must
have a row: every "CLNET_..." string literal of src/env.c (the library's one
reader of the environment) and every getenv("CLNET_...") in src/ (the clnet
program's, src/cli/); every row must be read somewhere; and the table of
docs/environment.md (its section "clnet's own") must list the same names.
Prints what differs and exits 1.
usage: check_env.py REPO_DIR"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."


def read(path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


header = read("include/clnet.h")
start = header.index("---- Environment ---")
end = header.index("*/", start)
table = set(re.findall(r"^ \*   (CLNET_[A-Z0-9_]+)=", header[start:end], re.M))

read_by_sources = set()
outside = []
for folder, _, files in os.walk(os.path.join(root, "src")):
    for name in files:
        if name.endswith(".c"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            # env.c names every variable it reads as a literal; elsewhere getenv("CLNET_X")
            path = os.path.relpath(os.path.join(folder, name), root)
            env_module = path == os.path.join("src", "env.c")
            pattern = r'"(CLNET_[A-Z0-9_]+)"' if env_module else r'getenv\("(CLNET_[A-Z0-9_]+)"'
            for m in re.finditer(pattern, text):
                read_by_sources.add(m.group(1))
            # the library reads its environment in env.c alone (the command-line
            # program, src/cli, is a client of clnet.h and reads its own), but for
            # CLNET_DEBUG in error.c: a failure has no object whose snapshot it could
            # read, and env.c reports its own failures through error.c
            calls = re.findall(r'\bgetenv\(("CLNET_[A-Z0-9_]+")?', text)
            if path == os.path.join("src", "error.c"):
                calls = [c for c in calls if c != '"CLNET_DEBUG"']
            if not env_module and not path.startswith(os.path.join("src", "cli")) and calls:
                outside.append(path)

page = read("docs/environment.md")
start = page.index("## clnet's own")
end = page.find("\n## ", start + 1)
documented = set(re.findall(r"^\| `(CLNET_[A-Z0-9_]+)", page[start:end], re.M))

problems = [f"{path} calls getenv: the library reads the environment in src/env.c alone"
            for path in sorted(outside)]
for name in sorted(read_by_sources - table):
    problems.append(f"{name} is read by src/ but has no row in include/clnet.h's Environment table")
for name in sorted(table - read_by_sources):
    problems.append(f"{name} has a row in include/clnet.h but nothing in src/ reads it")
for name in sorted(table ^ documented):
    where = "docs/environment.md's table" if name in table else "include/clnet.h's table"
    problems.append(f"{name} is missing from {where}")
for p in problems:
    print(p)
print(f"{len(table)} variables in the table, {len(read_by_sources)} read by the sources, "
      f"{len(documented)} in docs/environment.md: {'ok' if not problems else 'differ'}")
sys.exit(1 if problems else 0)
