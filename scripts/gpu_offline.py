#!/usr/bin/env python3
"""clnet's GPU kernels checked without a GPU (docs/performance.md, "GPU kernels checked offline").

Lists the kernels that clnet runs on a GPU by running it: PoCL posing as a discrete GPU
(CLNET_POSE=gpu) takes every GPU rule, tile and work-group, and CLNET_KERNEL_LOG records each
kernel launched (its program, build options, name and work-group size) and each program's
source. Then compiles every program with its options, as clnet builds it, for NVIDIA (clang
to PTX with libclc, then ptxas for sm_80 and sm_90) and AMD (clang's amdgcn back end, gfx1030
and gfx1100), and reads each launched kernel's registers, spills, stack frame (a private
array kept in off-chip memory), local memory and occupancy. Fails on any spill, any stack
frame or scratch, and local memory over a device's limit: slow on every GPU, and visible here.

  gpu_offline.py record CLNET MODELS LOG   the runs: every model of MODELS under the rules,
                                           `clnet tune` of TUNED (every GEMM candidate and
                                           convolution algorithm a GPU's tuner times), and each
                                           of those algorithms forced on ALGORITHM_MODELS
  gpu_offline.py check LOG [--table FILE] [--one-window]
                                           compiles and checks what LOG lists (any run with
                                           CLNET_POSE=gpu and CLNET_KERNEL_LOG=LOG: the test
                                           gpu_offline checks the gpu configuration's tests'); the
                                           table (Markdown) to FILE, a summary and every failure on
                                           stdout; --one-window: of the variants that differ in a
                                           window's sizes alone, the largest window's
  gpu_offline.py all CLNET MODELS LOG [--table FILE]   both (the test gpu_offline_more)

Exits 77 (a skip, for CTest) naming what is missing where clang-15, libclc-15 or the CUDA
toolkit's ptxas is not installed; 1 when a kernel fails a limit or a run fails; 0 otherwise.
The record step runs clnet on the first OpenCL device (the test gives it PoCL alone).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# The models each forced algorithm runs on: between them every convolution kind (1-D, 2-D,
# 3-D, transposed), window (1x1 to 5x5) and stride the zoo has. Every model runs the rules.
ALGORITHM_MODELS = ["lenet", "resnet18_w16", "conv1d", "volumes3d", "autoencoder"]
TUNED = "lenet"  # the GEMM's whole GPU space and every algorithm on its layers
BATCH = "2"
CLANG = "clang-15"
LIBCLC = "/usr/lib/clc"
PTXAS_PATHS = ["/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"]

# The targets: (name, kind, what it is).
TARGETS = [("sm_80", "nvidia", "A100"), ("sm_90", "nvidia", "H100/H200"),
           ("gfx1030", "amd", "RDNA2"), ("gfx1100", "amd", "RDNA3")]
NV_STATIC_LOCAL = 48 * 1024  # the most static __local memory a CUDA block may take
AMD_LDS = 64 * 1024
# Per SM: registers, threads, blocks, shared memory (bytes usable by blocks), and what the
# driver reserves a block (NVIDIA's occupancy calculator's figures).
NV_SM = {"sm_80": (65536, 2048, 32, 167936), "sm_90": (65536, 2048, 32, 233472)}
NV_RESERVED = 1024
DEFAULT_GROUP = 256  # for kernels launched with the driver's work-group size: say so


def tool_problems():
    """What is missing for the check, as sentences (empty: nothing)."""
    missing = []
    if not shutil.which(CLANG):
        missing.append(f"{CLANG} is not installed (apt-get install clang-15)")
    for bc in ("nvptx64--nvidiacl.bc", "amdgcn--amdhsa.bc"):
        if not os.path.exists(os.path.join(LIBCLC, bc)):
            missing.append(f"{LIBCLC}/{bc} is missing (apt-get install libclc-15)")
            break
    if not ptxas():
        missing.append("ptxas is not installed (the CUDA toolkit's, looked for in " +
                       ", ".join(PTXAS_PATHS) + " and on PATH)")
    return missing


def ptxas():
    for path in PTXAS_PATHS:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ptxas")


# ---- record ----

def tuned_algorithms(report):
    """The convolution algorithms a `clnet tune` report timed (a GPU's tuning space)."""
    found = []
    for line in report.splitlines():
        m = re.match(r"  (\S+)\s+[0-9.]+ us", line)
        if m and "/" not in m.group(1) and not re.match(r"(tiled-|own-|clblast)", m.group(1)):
            if m.group(1) not in found:
                found.append(m.group(1))
    return found


def record(clnet, models, log, jobs):
    """Runs clnet as a GPU would be run, each kernel launched going to LOG: every model under
    the rules, `clnet tune` of TUNED (the tuning space: every GEMM candidate and convolution
    algorithm it times), then each algorithm it timed forced on ALGORITHM_MODELS."""
    os.makedirs(log, exist_ok=True)
    env = dict(os.environ, CLNET_POSE="gpu", CLNET_KERNEL_LOG=log, CLNET_GUARD="0",
               CLNET_DEVICES="0")
    env.pop("CLNET_CONV", None)
    names = sorted(f[:-4] for f in os.listdir(models) if f.endswith(".cfg"))
    tune_cache = tempfile.mkdtemp(prefix="clnet-gpu-offline-")  # its own database

    def model(name):
        return os.path.join(models, name + ".cfg")

    def run(item):
        args, extra = item
        began = time.time()
        command = [clnet] + args
        out = subprocess.run(command, env=dict(env, **extra), capture_output=True, text=True)
        what = " ".join(f"{k}={v}" for k, v in extra.items() if k == "CLNET_CONV")
        label = f"{os.path.basename(command[0])} {' '.join(command[1:3])} {what}".strip()
        return label, out, time.time() - began

    failed = 0

    def run_all(runs):
        nonlocal failed
        outs = []
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for label, out, seconds in pool.map(run, runs):
                print(f"gpu_offline: {label}: {seconds:.1f} s", flush=True)
                if out.returncode != 0:
                    failed += 1
                    print(f"gpu_offline: {label} failed ({out.returncode}):\n{out.stderr[-2000:]}")
                outs.append(out)
        return outs

    first = [(["tune", model(TUNED), "--batch", BATCH], {"CLNET_CACHE_DIR": tune_cache})]
    first += [(["warm", model(name), "--batch", BATCH], {}) for name in names]
    report = run_all(first)[0].stdout
    algos = tuned_algorithms(report)
    if not algos:
        failed += 1
        print("gpu_offline: clnet tune timed no convolution algorithm:\n" + report[-2000:])
    run_all([(["warm", model(name), "--batch", BATCH], {"CLNET_CONV": algo})
             for algo in algos for name in ALGORITHM_MODELS])
    shutil.rmtree(tune_cache, ignore_errors=True)
    print(f"gpu_offline: recorded {len(first) + len(algos) * len(ALGORITHM_MODELS)} runs under "
          f"CLNET_POSE=gpu into {log} (the algorithms a GPU's tuner times: {', '.join(algos)})")
    return failed == 0


# ---- check ----

def window_size(options):
    """The taps of a window's options (WIN_KD * WIN_KH * WIN_KW), 0 without one."""
    k = [int(v) for v in re.findall(r"-DWIN_K[DHW]=(\d+)u", options)]
    return k[0] * k[1] * k[2] if len(k) == 3 else 0


def read_log(log, one_window=False):
    """{(program, options): {kernel: group size or None}} from LOG/kernels.tsv; with one_window,
    of the variants that differ in a window's sizes alone, the one of the largest window."""
    programs = {}
    with open(os.path.join(log, "kernels.tsv"), encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            program, options, kernel, size = parts
            group = None
            if size != "-":
                dims = [int(v) for v in size.split("x")]
                group = dims[0] * dims[1] * dims[2]
            kernels = programs.setdefault((program, options), {})
            kernels[kernel] = max(kernels.get(kernel) or 0, group or 0) or None
    if one_window:
        largest = {}
        for program, options in programs:
            key = (program, short(options))
            best = largest.get(key)
            if best is None or window_size(options) > window_size(best):
                largest[key] = options
        programs = {(p, o): k for (p, o), k in programs.items() if largest[(p, short(o))] == o}
    return programs


def compile_nvidia(source, options, work):
    """{target: {kernel: facts}} for the NVIDIA targets, or an error text."""
    ptx = os.path.join(work, "k.ptx")
    cmd = [CLANG, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl", "-march=sm_80",
           "-O3", "-S", "-Wno-linker-warnings", "-Xclang", "-finclude-default-header",
           "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
           os.path.join(LIBCLC, "nvptx64--nvidiacl.bc"), "-o", ptx, source] + options.split()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, "clang (nvptx64): " + out.stderr[-3000:]
    found = {}
    for target, kind, _ in TARGETS:
        if kind != "nvidia":
            continue
        res = subprocess.run([ptxas(), "-v", f"-arch={target}", ptx, "-o",
                              os.path.join(work, "k.cubin")], capture_output=True, text=True)
        if res.returncode != 0:
            return None, f"ptxas ({target}): " + res.stderr[-3000:]
        found[target] = parse_ptxas(res.stderr + res.stdout)
    return found, None


def parse_ptxas(text):
    kernels, current, props = {}, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            kernels[current] = {"regs": 0, "spill": 0, "stack": 0, "local": 0}
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and props in kernels:
            k = kernels[props]
            k["stack"] = int(m.group(1))
            k["spill"] = int(m.group(2)) + int(m.group(3))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current in kernels:
            kernels[current]["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            kernels[current]["local"] = int(s.group(1)) if s else 0
    return kernels


def compile_amd(source, options, work, target):
    obj = os.path.join(work, f"k-{target}.o")
    cmd = [CLANG, "-x", "cl", "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa", f"-mcpu={target}",
           "-nogpulib", "-O3", "-c", "-Wno-linker-warnings", "-Xclang",
           "-finclude-default-header", "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
           os.path.join(LIBCLC, "amdgcn--amdhsa.bc"), "-Rpass-analysis=kernel-resource-usage",
           "-o", obj, source] + options.split()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, f"clang (amdgcn {target}): " + out.stderr[-3000:]
    kernels, current = {}, None
    for line in out.stderr.splitlines():
        m = re.search(r"remark: Function Name: (\S+)", line)
        if m:
            current = m.group(1)
            kernels[current] = {"regs": 0, "spill": 0, "stack": 0, "local": 0, "occupancy": 0}
            continue
        m = re.search(r"remark:\s+(VGPRs|VGPRs Spill|SGPRs Spill|ScratchSize \[bytes/lane\]|"
                      r"LDS Size \[bytes/block\]|Occupancy \[waves/SIMD\]): (\d+)", line)
        if m and current:
            key, value = m.group(1), int(m.group(2))
            k = kernels[current]
            if key == "VGPRs":
                k["regs"] = value
            elif key.endswith("Spill"):
                k["spill"] += value
            elif key.startswith("Scratch"):
                k["stack"] = value
            elif key.startswith("LDS"):
                k["local"] = value
            else:
                k["occupancy"] = value
    return kernels, None


def nv_occupancy(target, regs, local, group):
    """The share of the SM's warps a kernel can keep resident (theoretical)."""
    regs_sm, threads_sm, blocks_sm, smem_sm = NV_SM[target]
    warps = max(1, (group + 31) // 32)
    per_warp = ((max(regs, 1) * 32 + 255) // 256) * 256
    by_regs = regs_sm // (per_warp * warps)
    by_threads = threads_sm // (warps * 32)
    by_smem = smem_sm // (local + NV_RESERVED) if local else blocks_sm
    blocks = min(by_regs, by_threads, by_smem, blocks_sm)
    return blocks * warps * 32 / threads_sm


def problems_of(target, kind, k):
    found = []
    if k["spill"]:
        found.append(f"{k['spill']} bytes spilled")
    if k["stack"]:
        found.append(f"{k['stack']} bytes of {'stack frame' if kind == 'nvidia' else 'scratch'}")
    limit = NV_STATIC_LOCAL if kind == "nvidia" else AMD_LDS
    if k["local"] > limit:
        found.append(f"{k['local']} bytes of local memory (the limit: {limit})")
    return found


def check_program(item, log):
    (program, options), kernels = item
    source = os.path.join(log, program + ".cl")
    rows, errors = [], []
    with tempfile.TemporaryDirectory(prefix="clnet-gpu-") as work:
        if not os.path.exists(source):
            return rows, [f"{program}: no source in the log ({source})"]
        facts = {}
        nv, err = compile_nvidia(source, options, work)
        if err:
            errors.append(f"{program} [{options}]: {err}")
        else:
            facts.update(nv)
        for target, kind, _ in TARGETS:
            if kind == "amd":
                amd, err = compile_amd(source, options, work, target)
                if err:
                    errors.append(f"{program} [{options}]: {err}")
                else:
                    facts[target] = amd
    for kernel, group in sorted(kernels.items()):
        row = {"program": program, "options": options, "kernel": kernel, "group": group,
               "targets": {}, "problems": []}
        for target, kind, _ in TARGETS:
            k = facts.get(target, {}).get(kernel)
            if k is None:
                if target in facts:
                    errors.append(f"{program} [{options}]: {target} compiled no kernel {kernel}")
                continue
            if kind == "nvidia":
                k["occupancy"] = nv_occupancy(target, k["regs"], k["local"],
                                              group or DEFAULT_GROUP)
            row["targets"][target] = k
            row["problems"] += [f"{target}: {p}" for p in problems_of(target, kind, k)]
        rows.append(row)
    return rows, errors


def short(options):
    """The options that tell variants apart, without the window's sizes (they change no code
    path: a layer's geometry)."""
    keep = [o for o in options.split() if not re.match(r"-DWIN_[A-Za-z]+=", o)]
    text = " ".join(o[2:] if o.startswith("-D") else o for o in keep)
    return text if text else ("a window's sizes" if options else "none")


def cell(target, kind, k):
    if kind == "nvidia":
        return (f"{k['regs']} / {k['spill']} / {k['stack']} / {k['local']} / "
                f"{k['occupancy'] * 100:.0f}%")
    return f"{k['regs']} / {k['spill']} / {k['stack']} / {k['local']} / {k['occupancy']}"


def table(rows):
    """Markdown: one row a (kernel, variant), the window's sizes folded into one."""
    seen, lines = {}, []
    for r in rows:
        key = (r["program"], r["kernel"], short(r["options"]))
        worst = seen.get(key)
        regs = max((k["regs"] for k in r["targets"].values()), default=0)
        if worst is None or regs > worst[0]:
            seen[key] = (regs, r)
    head = "| program | kernel | variant (build options) | group | " + " | ".join(
        f"{t} ({what})" for t, _, what in TARGETS) + " |"
    lines.append(head)
    lines.append("|" + "---|" * (4 + len(TARGETS)))
    for key in sorted(seen):
        r = seen[key][1]
        cells = [cell(t, kind, r["targets"][t]) if t in r["targets"] else "–"
                 for t, kind, _ in TARGETS]
        group = str(r["group"]) if r["group"] else f"({DEFAULT_GROUP})"
        lines.append(f"| {r['program']} | {r['kernel']} | {key[2]} | {group} | " +
                     " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def check(log, table_path, jobs, one_window, excepted=()):
    if not os.path.exists(os.path.join(log, "kernels.tsv")):
        print(f"gpu_offline: no {log}/kernels.tsv: run clnet (or the gpu configuration's layers "
              f"and GEMM tests) with CLNET_POSE=gpu CLNET_KERNEL_LOG={log} first")
        return False
    programs = {k: v for k, v in read_log(log, one_window).items() if k[0] not in excepted}
    if not programs:
        print(f"gpu_offline: {log}/kernels.tsv lists no kernel")
        return False
    rows, errors = [], []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for r, e in pool.map(lambda item: check_program(item, log), sorted(programs.items())):
            rows += r
            errors += e
    bad = [r for r in rows if r["problems"]]
    if table_path:
        with open(table_path, "w", encoding="utf-8") as f:
            f.write(table(rows))
    most = {t: max((r["targets"][t]["regs"] for r in rows if t in r["targets"]), default=0)
            for t, _, _ in TARGETS}
    print(f"gpu_offline: {len(programs)} programs, {len(rows)} kernel variants, each for " +
          ", ".join(t for t, _, _ in TARGETS) + "; the most registers: " +
          ", ".join(f"{t} {n}" for t, n in most.items()))
    for e in errors:
        print("gpu_offline: " + e)
    for r in bad:
        print(f"gpu_offline: FAIL {r['program']} {r['kernel']} [{r['options']}]: " +
              "; ".join(r["problems"]))
    if not bad and not errors:
        print("gpu_offline: no spill, no stack frame or scratch, local memory within every limit")
    return not bad and not errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("step", choices=["record", "check", "all"])
    ap.add_argument("paths", nargs="+", help="CLNET MODELS LOG (record, all) or LOG (check)")
    ap.add_argument("--table", help="write the Markdown table here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--except", dest="excepted", action="append", default=[], metavar="PROGRAM",
                    help="leave out a program the log has but no GPU rule or tuner chooses "
                         "(a CPU algorithm forced by a test)")
    ap.add_argument("--one-window", action="store_true",
                    help="of the variants that differ in a window's sizes alone, the largest's")
    a = ap.parse_args()
    want = 1 if a.step == "check" else 3
    if len(a.paths) != want:
        ap.error(f"{a.step} takes {'LOG' if want == 1 else 'CLNET MODELS LOG'}")
    missing = tool_problems() if a.step != "record" else []
    if missing:
        print("skipped: " + "; ".join(missing))
        return 77
    ok = True
    if a.step in ("record", "all"):
        clnet, models, log = a.paths
        if a.step == "all" and os.path.exists(os.path.join(log, "kernels.tsv")):
            os.remove(os.path.join(log, "kernels.tsv"))  # a fresh list
        ok = record(clnet, models, log, a.jobs)
    if a.step in ("check", "all"):
        ok = check(a.paths[-1], a.table, a.jobs, a.one_window, a.excepted) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
