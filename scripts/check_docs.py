#!/usr/bin/env python3
"""Keeps README.md and docs/ true to the program.

  check_docs.py generated CLNET [--write]
      Every region of the pages that the program prints,

          <!-- generated: clnet layers conv2d -->
          ```text
          ...what `clnet layers conv2d` prints...
          ```
          <!-- end generated -->

      must hold exactly what `CLNET layers conv2d` prints now. --write
      rewrites the regions instead (run it after changing an option table or
      a layer kind, and commit the pages). Also fails on a repository path
      in backquotes (`src/step.c`, `tests/fixtures/*.npy`) that names no file,
      and on a figure in bold in the README's Results table that is not on
      docs/results.md (the results page, where each figure has its command).

  check_docs.py blocks CLNET [--only PAGE[:LINE]] [--list]
      Runs every shell block of the pages that runs clnet: ```sh blocks
      whole, and the `$ ` lines of ```console blocks (the rest is output).
      Each page's blocks run in order in one scratch folder where
      `build/clnet` and `clnet` are CLNET, build/examples/ the example
      programs built next to it, and examples/, bench/, scripts/,
      include/ and cl/ are copies of the repository's (tests/ is linked).
      HTML comments on the lines right above a block's fence change what
      runs:

          <!-- doc-test: skip: REASON -->      not run (a reason is required)
          <!-- doc-test: sub "OLD" "NEW" -->   replace OLD by NEW first (shorter runs)
          <!-- doc-test: status N -->          the block must exit with N, not 0
          <!-- doc-test: needs mpi -->         run only with MPI built in and mpirun

      A block passes when it exits with its status within its time limit and
      prints every `clnet:` line of the plain ``` block right below it (the
      output the page shows; `…` in such a line matches anything).

Both exit 0 when every check passes and 1 otherwise.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK_SECONDS = 300  # one block's limit
# The repository's folders a block may read: copied, so that a block that
# edits what it finds (a broken kernel for a demonstration) edits a copy;
# tests/ (fixtures, 10 MB) is linked and must only be read.
COPIED = ("examples", "bench", "scripts", "include", "cl")
LINKED = ("tests",)


def pages():
    """README.md and docs/*.md, relative to the root, in a fixed order."""
    docs = os.path.join(ROOT, "docs")
    names = sorted(n for n in os.listdir(docs) if n.endswith(".md")) if os.path.isdir(docs) else []
    return ["README.md"] + ["docs/" + n for n in names]


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


# ---- generated regions -----------------------------------------------------------------

GEN_START = re.compile(r"^<!-- generated: clnet (.*?) -->\n", re.M)
GEN_END = "<!-- end generated -->\n"


def program_output(clnet, args):
    run = subprocess.run([clnet] + shlex.split(args), capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        raise RuntimeError(f"`clnet {args}` exited {run.returncode}: {run.stderr.strip()}")
    return "```text\n" + run.stdout + ("" if run.stdout.endswith("\n") else "\n") + "```\n"


def generated(clnet, write):
    failures, regions = 0, 0
    for page in pages():
        text = read(page)
        out, at = [], 0
        for m in GEN_START.finditer(text):
            end = text.find(GEN_END, m.end())
            line = text.count("\n", 0, m.start()) + 1
            if end < 0:
                print(f"FAIL {page}:{line}: no `{GEN_END.strip()}` after the region's start")
                failures += 1
                continue
            regions += 1
            want = program_output(clnet, m.group(1))
            if text[m.end():end] != want:
                if write:
                    print(f"wrote {page}:{line}: clnet {m.group(1)}")
                else:
                    print(f"FAIL {page}:{line}: differs from what `clnet {m.group(1)}` prints "
                          f"(scripts/check_docs.py generated CLNET --write regenerates it)")
                    failures += 1
            out.append(text[at:m.end()] + want)
            at = end
        if write and out:
            with open(os.path.join(ROOT, page), "w", encoding="utf-8") as f:
                f.write("".join(out) + text[at:])
    failures += missing_kinds(clnet)
    failures += stale_paths()
    failures += results_agree()
    print(f"{regions} generated regions checked, {failures} failures")
    return failures == 0 and regions > 0


# A repository path in backquotes: `src/step.c`, `tests/fixtures/npy/*.npy`.
REPO_PATH = re.compile(r"`((?:src|cl|tests|scripts|bench|examples|include|docs|cmake|\.ci)/"
                       r"[A-Za-z0-9_./*-]+)`")


def stale_paths():
    """Every repository path the pages name in backquotes exists (a pattern matches a file; a
    program built from NAME.c counts as NAME; a part in capitals, TARGET, is a placeholder)."""
    import glob
    failures = 0
    for page in pages():
        text = read(page)
        for m in REPO_PATH.finditer(text):
            path = m.group(1).rstrip(".")
            if re.search(r"(^|/)[A-Z][A-Z_]+(/|$|-)", path):
                continue
            full = os.path.join(ROOT, path)
            found = glob.glob(full) if "*" in path else os.path.exists(full) or \
                os.path.exists(full + ".c")
            if not found:
                line = text.count("\n", 0, m.start()) + 1
                print(f"FAIL {page}:{line}: `{path}` names no file of the repository")
                failures += 1
    return failures


def results_agree():
    """Every figure in bold in the README's Results table is on docs/results.md too, so that
    the front page shows no figure the results page has replaced."""
    text, results = read("README.md"), read("docs/results.md")
    start = text.find("## Results")
    table = text[start:text.find("\n## ", start + 1)] if start >= 0 else ""
    failures = 0
    for m in re.finditer(r"\*\*([^*]+)\*\*", table):
        if f"**{m.group(1)}**" not in results:
            line = text.count("\n", 0, start + m.start()) + 1
            print(f"FAIL README.md:{line}: **{m.group(1)}** is not on docs/results.md")
            failures += 1
    return failures


def missing_kinds(clnet):
    """Where the pages print kinds one by one (`clnet layers KIND`), every
    kind the program knows must have its region."""
    shown = {m.group(1).split()[1] for page in pages() for m in GEN_START.finditer(read(page))
             if m.group(1).startswith("layers ") and len(m.group(1).split()) == 2}
    if not shown:
        return 0
    listing = program_output(clnet, "layers").splitlines()
    kinds = {line for line in listing if re.fullmatch(r"[a-z][a-z0-9_]*", line)}
    for kind in sorted(kinds - shown):
        print(f"FAIL layer kind {kind} has no `<!-- generated: clnet layers {kind} -->` region")
    return len(kinds - shown)


# ---- shell blocks ----------------------------------------------------------------------

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!-- doc-test: (.*?) -->\s*$")
RUNS_CLNET = re.compile(r"(^|[\s/;|&(])clnet(?=\s|$)", re.M)


class Block:
    def __init__(self, page, line, lang, body, markers):
        self.page, self.line, self.lang, self.markers = page, line, lang, markers
        self.script = body if lang == "sh" else console_commands(body)
        self.skip, self.subs, self.status, self.needs_mpi, self.error = None, [], 0, False, None
        self.prints = []  # the `clnet:` lines of the output shown right below the block
        for m in markers:
            self.read_marker(m)

    def read_marker(self, m):
        if m.startswith("skip:") and m[5:].strip():
            self.skip = m[5:].strip()
        elif m.startswith("sub "):
            args = shlex.split(m[4:])
            if len(args) != 2:
                self.error = f"sub takes two quoted strings: {m}"
            elif args[0] not in self.script:
                self.error = f"sub: {args[0]!r} is not in the block"
            else:
                self.subs.append(args)
        elif re.fullmatch(r"status \d+", m):
            self.status = int(m.split()[1])
        elif m == "needs mpi":
            self.needs_mpi = True
        else:
            self.error = f"unknown marker (skip: REASON, sub, status N, needs mpi): {m}"

    def name(self):
        return f"{self.page}:{self.line}"

    def command(self):
        script = self.script
        for old, new in self.subs:
            script = script.replace(old, new)
        return script


def console_commands(body):
    """The commands of a transcript: `$ ` lines and the lines that continue them."""
    commands, going_on = [], False
    for line in body.splitlines():
        if line.startswith("$ ") or going_on:
            commands.append(line[2:] if line.startswith("$ ") and not going_on else line)
            going_on = line.rstrip().endswith("\\")
    return "\n".join(commands) + "\n"


def page_blocks(page):
    """The blocks of a page that run clnet, with their markers."""
    lines = read(page).splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        body = "\n".join(lines[start + 1:i]) + "\n"
        i += 1
        markers, j = [], start - 1
        while j >= 0 and MARKER.match(lines[j]):
            markers.insert(0, MARKER.match(lines[j]).group(1))
            j -= 1
        if lang in ("sh", "console"):
            block = Block(page, start + 1, lang, body, markers)
            if RUNS_CLNET.search(block.script) or markers:
                block.prints = shown_output(lines, i)
                found.append(block)
        elif markers:
            found.append(Block(page, start + 1, "sh", "", markers))
            found[-1].error = f"doc-test markers above a ```{lang} block, which never runs"
    return found


def shown_output(lines, i):
    """The `clnet:` lines of a plain block that follows line i with only blank lines between:
    what the page says the block above prints."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or lines[i].rstrip() != "```":
        return []
    shown = []
    for line in lines[i + 1:]:
        if line.startswith("```"):
            break
        if line.startswith("clnet:"):
            shown.append(line.strip())
    return shown


def missing_lines(shown, output):
    """The lines the page shows that the output lacks; `…` in a shown line stands for anything."""
    printed = [line.strip() for line in output.splitlines()]
    missing = []
    for line in shown:
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("…")))
        if not any(pattern.fullmatch(p) for p in printed):
            missing.append(line)
    return missing


def has_mpi(clnet):
    run = subprocess.run([clnet, "version"], capture_output=True, text=True)
    return "MPI: yes" in run.stdout and shutil.which("mpirun") is not None


def scratch_folder(clnet):
    folder = tempfile.mkdtemp(prefix="clnet-docs-")
    os.mkdir(os.path.join(folder, "build"))
    os.symlink(os.path.abspath(clnet), os.path.join(folder, "build", "clnet"))
    examples = os.path.join(os.path.dirname(os.path.abspath(clnet)), "examples")
    if os.path.isdir(examples):  # the built example programs (make_volumes)
        os.symlink(examples, os.path.join(folder, "build", "examples"))
    for name in COPIED:
        shutil.copytree(os.path.join(ROOT, name), os.path.join(folder, name), symlinks=True)
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), os.path.join(folder, name))
    return folder


def run_block(block, folder, env):
    started = time.monotonic()
    try:
        run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.command()], cwd=folder,
                             env=env, capture_output=True, text=True, timeout=BLOCK_SECONDS)
        status, output = run.returncode, run.stdout + run.stderr
    except subprocess.TimeoutExpired as e:
        status, output = None, f"still running after {BLOCK_SECONDS} s\n{e.stdout or ''}"
    return status, output, time.monotonic() - started


def blocks(clnet, only, list_only):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(clnet)) + os.pathsep + env.get("PATH", "")
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    mpi = has_mpi(clnet)
    counts = {"ok": 0, "skip": 0, "FAIL": 0}
    for page in pages():
        todo = [b for b in page_blocks(page)
                if not only or b.page == only[0] and (only[1] is None or b.line == only[1])]
        if not todo:
            continue
        folder = None if list_only else scratch_folder(clnet)
        for b in todo:
            verdict, why = "ok", ""
            if b.error:
                verdict, why = "FAIL", b.error
            elif b.skip:
                verdict, why = "skip", b.skip
            elif b.needs_mpi and not mpi:
                verdict, why = "skip", "this clnet has no MPI, or mpirun is missing"
            elif list_only:
                verdict, why = "run", b.command().strip().replace("\n", " ")[:100]
            else:
                status, output, seconds = run_block(b, folder, env)
                why = f"{seconds:.1f} s"
                missing = missing_lines(b.prints, output)
                if status != b.status:
                    verdict = "FAIL"
                    why = (f"exited {status}, expected {b.status}\n--- the block ---\n"
                           f"{b.command()}--- its output (the end) ---\n{output[-3000:]}")
                elif missing:
                    verdict = "FAIL"
                    why = ("printed none of the page's line(s)\n  " + "\n  ".join(missing) +
                           "\n--- what it printed (the end) ---\n" + output[-3000:])
            counts[verdict] = counts.get(verdict, 0) + 1
            print(f"{verdict:4} {b.name()}: {why}", flush=True)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{counts['ok']} blocks ran, {counts['skip']} skipped, {counts['FAIL']} failed")
    return counts["FAIL"] == 0 and (list_only or counts["ok"] > 0)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("generated", "blocks"):
        print(__doc__)
        return 2
    clnet = argv[2]
    if argv[1] == "generated":
        return 0 if generated(clnet, "--write" in argv[3:]) else 1
    only = None
    if "--only" in argv:
        where = argv[argv.index("--only") + 1].split(":")
        only = (where[0], int(where[1]) if len(where) > 1 else None)
    return 0 if blocks(clnet, only, "--list" in argv) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
