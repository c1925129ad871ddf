#!/usr/bin/env python3
"""The test suite's summary and its recorded figures.

  suite.py summary JUNIT
      after a CTest run written with --output-junit JUNIT: each skipped test with the reason
      it printed ("skipped: ..."), and a failure when a test that passed printed such a line
      (a part of its checks left out: testing.md says that is a skip, never a pass)
  suite.py record JUNIT NAME --wall SECONDS [--build SECONDS] [--machine TEXT]
      keeps that run's per-test times in tests/suite_runs.json as the run NAME (plain-cold,
      plain-warm, sanitized-cold, ...), with the commit, the date and the machine; a run of
      the same NAME, commit and machine again is a repeat measurement: its wall and build
      times join the earlier ones' (`repeats`, each shown in the docs' table)
  suite.py figures [--write]
      the docs' generated regions (<!-- generated: suite WHAT -->) made from
      tests/suite_runs.json: fails where a page differs; --write rewrites them
  suite.py check BUILD
      the count of tests the suite has in BUILD (CTest's, less the extended step's) is the
      count of every recorded run of the whole suite (plain-*, sanitized-*), and the docs'
      regions are what `figures` makes (the test `suite_figures`)
"""
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "tests", "suite_runs.json")
PAGES = ["README.md", "docs/testing.md"]
GEN = re.compile(r"^<!-- generated: suite (\S+) -->\n(.*?)^<!-- end generated -->\n", re.M | re.S)
SKIP_LINE = re.compile(r"^skipped: (.*)$", re.M)


def read_junit(path):
    """[(name, status, seconds, output)] in the order CTest wrote them."""
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        out = case.find("system-out")
        tests.append((case.get("name"), case.get("status"), float(case.get("time") or 0),
                      out.text if out is not None and out.text else ""))
    return tests


def summary(junit):
    tests = read_junit(junit)
    skipped = [(n, SKIP_LINE.findall(o)) for n, s, _, o in tests if s == "notrun"]
    partial = [(n, SKIP_LINE.findall(o)) for n, s, _, o in tests
               if s == "run" and SKIP_LINE.search(o)]
    if skipped:
        print(f"{len(skipped)} test(s) skipped, with their reasons:")
        for name, reasons in skipped:
            print(f"  {name}: {reasons[-1] if reasons else '(it printed no reason)'}")
    for name, reasons in partial:
        print(f"FAIL {name} passed but left a part out: {'; '.join(reasons)}")
    ran = sum(s != "notrun" for _, s, _, _ in tests)
    print(f"suite: {len(tests)} tests, {ran} ran, {len(skipped)} skipped, "
          f"{sum(s == 'fail' for _, s, _, _ in tests)} failed")
    return 1 if partial else 0


def load_record():
    with open(RECORD, encoding="utf-8") as f:
        return json.load(f)


def record(junit, name, wall, build, machine):
    tests = read_junit(junit)
    data = load_record() if os.path.exists(RECORD) else {"runs": {}}
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    build_s = round(build) if build is not None else None
    earlier = data["runs"].get(name, {})
    repeats = []
    if earlier.get("commit") == commit and earlier.get("machine") == machine:
        repeats = earlier.get("repeats") or [[earlier["wall_s"], earlier.get("build_s")]]
    data["runs"][name] = {
        "commit": commit, "date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": machine,
        "wall_s": round(wall), "build_s": build_s, "count": len(tests),
        "skipped": sorted(n for n, s, _, _ in tests if s == "notrun"),
        "tests": {n: round(t, 1) for n, _, t, _ in tests},
        "repeats": repeats + [[round(wall), build_s]],
    }
    with open(RECORD, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"recorded {name}: {len(tests)} tests, {round(wall)} s wall (measurement "
          f"{len(data['runs'][name]['repeats'])} at {commit}), in {RECORD}")


def minutes(seconds):
    return f"{seconds // 60} min {seconds % 60:02d} s"


def walls(r):
    """A run's wall time, build included, or each of its repeat measurements'."""
    each = r.get("repeats") or [[r["wall_s"], r.get("build_s")]]
    text = ", ".join(minutes(w) for w, _ in each)
    builds = [b for _, b in each if b is not None]
    if builds:
        text += f" ({', '.join(str(b) for b in builds)} s building)"
    return text


def region(what, data):
    """The text of a generated region."""
    runs = data["runs"]
    if what == "summary":
        cold, skipped = runs["plain-cold"], runs["plain-cold"]["skipped"]
        warm = runs.get("plain-warm")
        took = [w for w, _ in cold.get("repeats") or [[cold["wall_s"], None]]]
        line = (f"The suite has {cold['count']} tests ({len(skipped)} of them skipped on a machine "
                f"without a GPU). From a fresh clone with empty caches `scripts/test.sh` took "
                f"{minutes(max(took))}, building included, on the {cold['machine']} "
                f"({cold['date']}{f', the longest of {len(took)} runs' if len(took) > 1 else ''})")
        if warm:
            line += f"; run again with the caches warm, {minutes(warm['wall_s'])}"
        return line + ".\n"
    if what == "times":
        rows = ["| run | tests | wall time (build included) | CTest's longest | machine, date, commit |",
                "|---|---|---|---|---|"]
        for name in sorted(runs):
            r = runs[name]
            top = sorted(r["tests"].items(), key=lambda kv: -kv[1])[:4]
            longest = ", ".join(f"`{n}` {t:.0f} s" for n, t in top)
            rows.append(f"| {name} | {r['count']} | {walls(r)} | {longest} | "
                        f"{r['machine']}, {r['date']}, {r['commit']} |")
        return "\n".join(rows) + "\n"
    raise ValueError(f"no region 'suite {what}'")


def figures(write):
    data, failures, regions = load_record(), 0, 0
    for page in PAGES:
        path = os.path.join(ROOT, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()

        def fill(m):
            nonlocal failures, regions
            regions += 1
            want = region(m.group(1), data)
            if m.group(2) != want and not write:
                line = text.count("\n", 0, m.start()) + 1
                print(f"FAIL {page}:{line}: the region 'suite {m.group(1)}' differs from "
                      f"tests/suite_runs.json (scripts/suite.py figures --write rewrites it)")
                failures += 1
            return f"<!-- generated: suite {m.group(1)} -->\n{want}<!-- end generated -->\n"

        new = GEN.sub(fill, text)
        if write and new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"wrote {page}")
    print(f"{regions} suite regions checked, {failures} differ")
    return failures == 0 and regions > 0


def registered(build):
    out = subprocess.run(["ctest", "--test-dir", build, "-N", "-LE", "extended"],
                         capture_output=True, text=True)
    m = re.search(r"^Total Tests: (\d+)$", out.stdout, re.M)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"ctest -N in {build} failed: {out.stderr.strip()}")
    return int(m.group(1))


def check(build):
    data, ok = load_record(), True
    have = registered(build)
    for name, r in sorted(data["runs"].items()):
        if name.split("-")[0] not in ("plain", "sanitized"):
            continue  # a run of a part (quick, extended) counts its part
        if r["count"] != have:
            print(f"FAIL the recorded run {name} counted {r['count']} tests; CTest registers "
                  f"{have} here: measure again and record it (testing.md, 'How long it takes')")
            ok = False
    if ok:
        print(f"CTest registers {have} tests, as every recorded run counted")
    return figures(False) and ok


def main(argv):
    if len(argv) >= 3 and argv[1] == "summary":
        return summary(argv[2])
    if len(argv) >= 4 and argv[1] == "record":
        opts = dict(zip(argv[4::2], argv[5::2]))
        return record(argv[2], argv[3], float(opts["--wall"]),
                      float(opts["--build"]) if "--build" in opts else None,
                      opts.get("--machine", "unnamed machine")) or 0
    if len(argv) >= 2 and argv[1] == "figures":
        return 0 if figures("--write" in argv[2:]) else 1
    if len(argv) >= 3 and argv[1] == "check":
        return 0 if check(argv[2]) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
