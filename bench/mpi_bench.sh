#!/usr/bin/env bash
# mpi_bench.sh — measured time of every strategy on real MPI ranks, next to the cost model.
#
#   bench/mpi_bench.sh <build-dir> [min_MiB] [repeat]    # defaults 16 MiB, 5 runs
#
# 1. Calibration: single all_gathers and all_to_alls on x=8 (32 KiB to 64 MiB global) give
#    (messages, bytes) per plan (its cost_us under `*=1:1e6` and `*=0:1`) and a measured median;
#    a least-squares fit of time = alpha * messages + bytes / bandwidth, relative error
#    weighted, gives the model `*=alpha:GBps` of this machine (every axis alike: shared memory).
# 2. Cases: every 8-device case of bench/cases.txt, scaled (--scale K, smallest K) to at least
#    min_MiB global and kept when at most 256 MiB; each strategy synthesized under the fitted
#    model and run by reshard-mpi on 8 ranks (median of `repeat` runs, data checked).
# Prints Markdown: the fitted model and a table of measured medians with the model's
# prediction in parentheses, plus ratios to `normal`.
set -eu
BUILD=${1:?usage: mpi_bench.sh <build-dir> [min_MiB] [repeat]}
MIN_MIB=${2:-16}
REPEAT=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
# Shared memory only; single-copy (CMA) needs ptrace rights containers often lack, so it is off
# unless the caller sets OMPI_MCA_btl_vader_single_copy_mechanism=cma.
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"

exec python3 - "$BUILD" "$MIN_MIB" "$REPEAT" "$HERE/cases.txt" "$MPIRUN" <<'PY'
import json, math, re, subprocess, sys

build, min_mib, repeat, cases_path, mpirun = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
RESHARD = f"{build}/tools/reshard"
MPI = f"{build}/tools/reshard-mpi"
STRATEGIES = ["normal", "optimal", "gspmd", "greedy", "naive", "direct", "auto"]
BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i8": 1, "i32": 4, "i64": 8}

def devices(mesh):
    return math.prod(int(p.split("=")[1]) for p in mesh.split(","))

def dims(t):
    return [int(d) for d in re.findall(r"(\d+)(?:\{[^}]*\})?", re.search(r"\[(.*)\]", t).group(1))]

def global_bytes(t):
    return BYTES[t.split("[")[0].strip()] * math.prod(dims(t))

def features(mesh, frm, to, strategy, scale):
    """(messages, µs at 1 GB/s) of the plan: its cost_us under two extreme models."""
    out = []
    for model in ("*=1:1000000", "*=0:1"):
        args = [RESHARD, "plan", "--mesh", mesh, "--from", scaled(frm, scale), "--to",
                scaled(to, scale), "--strategy", strategy, "--axis-cost", model, "--json"]
        out.append(json.loads(subprocess.run(args, check=True, capture_output=True,
                                             text=True).stdout)["metrics"]["cost_us"])
    return out

def scaled(t, k):
    """t with every global size times k (axis names inside braces untouched)."""
    head, body, tail = re.match(r"([^\[]*\[)(.*)(\].*)", t).groups()
    body = re.sub(r"(\d+)(\{[^}]*\})?", lambda m: str(int(m.group(1)) * k) + (m.group(2) or ""), body)
    return head + body + tail

def measure(mesh, frm, to, strategy, scale, model=None):
    args = mpirun + ["-np", str(devices(mesh)), MPI, "--mesh", mesh, "--from", frm, "--to", to,
                     "--strategy", strategy, "--scale", str(scale), "--repeat", repeat, "--json"]
    if model:
        args += ["--axis-cost", model]
    r = subprocess.run(args, capture_output=True, text=True)
    line = next((l for l in r.stdout.splitlines() if l.startswith("{")), None)
    if r.returncode != 0 or line is None:
        err = [l for l in r.stderr.splitlines() if l.startswith("reshard-mpi")]
        return {"error": (err or ["exit %d" % r.returncode])[0]}
    return json.loads(line)

# --- 1. Calibration. ---
samples = []
for kib in (32, 256, 2048, 16384, 65536):
    n = kib * 1024 // 4 // 64  # rows of f32[n,64]
    for frm, to in ((f"f32[{n}{{x}},64]", f"f32[{n},64]"), (f"f32[{n}{{x}},64]", f"f32[{n},64{{x}}]")):
        m = measure("x=8", frm, to, "normal", 1)
        a, b = features("x=8", frm, to, "normal", 1)
        samples.append((a, b, m["time_us_median"]))
# Weighted least squares (weights 1/t^2: relative error) for t = alpha*a + b/GBps.
saa = sum(a * a / t / t for a, b, t in samples); sbb = sum(b * b / t / t for a, b, t in samples)
sab = sum(a * b / t / t for a, b, t in samples)
sat = sum(a / t for a, b, t in samples); sbt = sum(b / t for a, b, t in samples)
det = saa * sbb - sab * sab
alpha = max((sat * sbb - sbt * sab) / det, 0.01)
inv_gbps = max((saa * sbt - sab * sat) / det, 1e-6)
model = "*=%.3g:%.3g" % (alpha, 1 / inv_gbps)
print(f"Fitted cost model (8 ranks, shared memory, 2 cores oversubscribed): `--axis-cost '{model}'`"
      f" (alpha {alpha:.3g} µs per message, {1 / inv_gbps:.3g} GB/s)\n")
print("| calibration plan | global | measured µs | model µs |\n|---|---|---|---|")
for (a, b, t), (kib, kind) in zip(samples, [(k, c) for k in (32, 256, 2048, 16384, 65536)
                                            for c in ("all_gather", "all_to_all")]):
    print(f"| {kind} x=8 | {kib} KiB | {t:.0f} | {alpha * a + b * inv_gbps:.0f} |")
print()

# --- 2. Cases. ---
cases = []
for line in open(cases_path):
    body = line.split("#")[0].strip()
    if not body:
        continue
    mesh, frm, to = (p.strip() for p in body.split(";"))
    if devices(mesh) != 8:
        continue
    g, rank = global_bytes(frm), max(len(dims(frm)), 1)
    k = 1
    while g * k ** rank < min_mib * 2 ** 20:
        k += 1
    if g * k ** rank > 256 * 2 ** 20:
        continue
    cases.append((mesh, frm, to, k, g * k ** rank / 2 ** 20))

header = "| # | case | scale | global MiB | " + " | ".join(STRATEGIES) + " |"
print("Measured median ms (model ms), 8 ranks on 2 cores; `*` = wrong data, `-` = no plan.\n")
print(header)
print("|" + "---|" * (4 + len(STRATEGIES)))
ratios = {s: [] for s in STRATEGIES}
for i, (mesh, frm, to, k, mib) in enumerate(cases, 1):
    cells, times = [], {}
    for s in STRATEGIES:
        m = measure(mesh, frm, to, s, k, model)
        if "error" in m:
            cells.append("-")
            continue
        times[s] = m["time_us_median"]
        mark = "" if m["ok"] else "*"
        cells.append(f"{m['time_us_median'] / 1e3:.2f}{mark} ({m['cost_us'] / 1e3:.2f})")
    for s in times:
        if "normal" in times and times["normal"] > 0:
            ratios[s].append(times[s] / times["normal"])
    print(f"| {i} | `{mesh} {frm} → {to}` | {k} | {mib:.0f} | " + " | ".join(cells) + " |",
          flush=True)
print("\nGeometric mean of measured time / normal's measured time:\n")
print("| " + " | ".join(STRATEGIES) + " |\n|" + "---|" * len(STRATEGIES))
print("| " + " | ".join("%.2f" % math.exp(sum(map(math.log, r)) / len(r)) if r else "-"
                        for r in ratios.values()) + " |")
PY
