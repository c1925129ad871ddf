#!/usr/bin/env python3
"""Checks that the source files call each other one way: no circle.

A module is a file name without its extension (step.c and step.h are the
module "step"; the layer files in src/layers/ are one module, "layers",
as is src/cli/). Module A depends on B when a file of A includes B.h.
A circle among modules is an error, printed as A -> B -> ... -> A.
usage: check_layering.py SRC_DIR"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "src"
deps = {}


def module(path):
    rel = os.path.relpath(path, src)
    top = rel.split(os.sep)[0]
    if top in ("layers", "cli"):
        return top
    return os.path.splitext(rel)[0]


headers = {}
for root, _, files in os.walk(src):
    for name in files:
        if name.endswith(".h"):
            headers[name] = module(os.path.join(root, name))
for root, _, files in os.walk(src):
    for name in files:
        if not name.endswith((".c", ".h")):
            continue
        path = os.path.join(root, name)
        me = module(path)
        with open(path, encoding="utf-8") as f:
            for inc in re.findall(r'^#include "([^"]+)"', f.read(), re.M):
                other = headers.get(os.path.basename(inc))
                if other and other != me:
                    deps.setdefault(me, set()).add(other)

state, stack, circles = {}, [], []


def visit(m):
    state[m] = 1
    stack.append(m)
    for n in sorted(deps.get(m, ())):
        if state.get(n) == 1:
            circles.append(stack[stack.index(n):] + [n])
        elif n not in state:
            visit(n)
    stack.pop()
    state[m] = 2


for m in sorted(deps):
    if m not in state:
        visit(m)
for c in circles:
    print("circle: " + " -> ".join(c))
print(f"{len(deps)} modules, {sum(len(v) for v in deps.values())} dependencies, "
      f"{len(circles)} circles")
sys.exit(1 if circles else 0)
