#!/usr/bin/env python3
"""Checks that docs/api.md mentions every public function of include/clnet.h.

A public function is one the header declares or defines at file scope: a
name clnet_... directly followed by `(` in a declaration outside comments,
preprocessor lines, typedefs and struct or enum bodies (deprecated names
count too). It is documented when docs/api.md shows it in code: inside
backticks (`clnet_net_add`, `clnet_net_add(net, line)`) or in a fenced code
block. Prints how many functions it checked; lists every missing one and
exits 1 when any is missing.
usage: check_api_docs.py [ROOT]   (ROOT: the repository, default: this script's)"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(HERE)
HEADER = os.path.join(ROOT, "include", "clnet.h")
PAGE = os.path.join(ROOT, "docs", "api.md")


def strip_c(text):
    """The header without comments and preprocessor lines: comments become a
    space, string and character literals become "" (a "/*" inside one is not a
    comment), and #-lines with their backslash continuations are dropped."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            out.append(" ")
        elif text[i] in "\"'":
            quote, i = text[i], i + 1
            while i < n and text[i] != quote and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        else:
            out.append(text[i])
            i += 1
    lines, going_on = [], False
    for line in "".join(out).split("\n"):
        if going_on or line.lstrip().startswith("#"):
            going_on = line.rstrip().endswith("\\")
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines)


TOKEN = re.compile(r'[A-Za-z_]\w*|""|\S')
NAME = re.compile(r"clnet_[a-z0-9_]*\Z")


def header_functions(path):
    """Names of the functions a C header declares or defines at file scope,
    in the order they appear."""
    with open(path, encoding="utf-8") as f:
        tokens = TOKEN.findall(strip_c(f.read()))
    names, statement, i = [], [], 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "extern" and tokens[i + 1:i + 3] == ['""', "{"]:
            i += 3  # extern "C" { ... }: its contents are at file scope; its } is skipped below
            continue
        if tok == "{":
            if statement and statement[0] != "typedef":
                names += function_names(statement)  # an inline definition: skip its body
                statement = []
            depth = 0
            while i < len(tokens):  # a body (of a struct, an enum, a function): skip it whole
                depth += {"{": 1, "}": -1}.get(tokens[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        if tok == ";":
            if statement and statement[0] != "typedef":
                names += function_names(statement)
            statement = []
        elif tok != "}":
            statement.append(tok)
        i += 1
    return names


def function_names(statement):
    """The functions one file-scope statement declares: each clnet_ name
    directly followed by ( outside any parentheses and before any = of its
    declarator, so that macros around it (CLNET_API, __attribute__((...)))
    and initialisers do not count; `void clnet_a(void), clnet_b(int)` declares
    two."""
    found, depth, value = [], 0, False
    for k, tok in enumerate(statement):
        if tok == "(":
            if depth == 0 and not value and k and NAME.match(statement[k - 1]):
                found.append(statement[k - 1])
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok == "=":
            value = True
        elif depth == 0 and tok == ",":
            value = False
    return found


def documented_names(path):
    """Every clnet_ name shown in code in a Markdown page: fenced blocks and
    inline code spans (HTML comments do not count)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    code, prose, fence = [], [], None
    for line in lines:
        m = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            else:
                code.append(line)
        elif m:
            fence = m.group(1)
        else:
            prose.append(line)
    text = re.sub(r"<!--.*?-->", " ", "\n".join(prose), flags=re.S)
    for m in re.finditer(r"(`+)(.+?)(?<!`)\1(?!`)", text, re.S):
        code.append(m.group(2))
    return set(re.findall(r"\bclnet_[a-z0-9_]*\b", "\n".join(code)))


def main():
    functions = header_functions(HEADER)
    if not functions:
        print(f"FAIL found no functions in {HEADER}")
        return 1
    if not os.path.exists(PAGE):
        print(f"FAIL {PAGE} is missing")
        return 1
    shown = documented_names(PAGE)
    missing = [f for f in functions if f not in shown]
    for name in missing:
        print(f"FAIL {name} (include/clnet.h) is not in docs/api.md: give it a prototype in a "
              f"```c block or `{name}` in a table")
    print(f"checked {len(functions)} functions of include/clnet.h against docs/api.md: "
          f"{len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
