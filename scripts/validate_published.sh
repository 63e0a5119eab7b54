#!/usr/bin/env bash
# The cost model beside published measurements (docs/cost_model.md, "Validation"). Every input is
# documented in topologies/frontier.json, models/gpt-20b.json and docs/cost_model.md; none is fitted
# to the figures it predicts. Four parts:
#   1. RCCL bus bandwidth on Frontier (Singh et al., "The Big Send-off", arXiv 2504.18658, raw logs):
#      the busbw the model gives a flat RCCL ring at the published sizes and GCD counts, (A) from the
#      documented hardware figures alone (NCCL's channels bound by a node's 4 x 25 GB/s NICs, no
#      measured curve) and (B) calibrated as a user would on 2 and 4 nodes (the preset's 16- and
#      32-GCD rows only; the 1-node row for one node) and predicting 8 to 128 nodes from them;
#   2. Xu et al. (2025), 20B GPT on 48 Frontier nodes (384 GCDs): the paper's three ratios with the
#      systems priced as they run: its baselines are DeepSpeed's ZeRO-3 and ZeRO++ (RCCL over their
#      process groups, a gather per module, reduce buckets of 5e8), its scheme runs on the same
#      DeepSpeed port; tierzero's presets as tierzero runs them are shown for contrast;
#   3. sensitivity to what the paper leaves open (its three-level assignment, micro-batch,
#      accumulation, its ZeRO++ port's overlap, kernel efficiency and per-call overhead): which
#      values reproduce the ratios within 15%; then what the paper's figures imply: each system's
#      unhidden communication at 384 GCDs beside all its collectives priced from RCCL's busbw;
#   4. the other published figures named in docs/cost_model.md, and why they are or are not predicted.
# Usage: bash scripts/validate_published.sh [path/to/tierzero]   (default: build/tierzero; ~30 s)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/tierzero}
if [ -n "${1:-}" ]; then  # a binary named by the user must be one: no silent build of another
  [ -f "$bin" ] && [ -x "$bin" ] || { echo "validate_published: $bin is not an executable tierzero binary" >&2; exit 2; }
elif [ ! -x "$bin" ]; then
  bash scripts/build.sh build >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 - "$bin" "$out" <<'EOF'
import itertools, json, os, subprocess, sys
tz, out = sys.argv[1], sys.argv[2]
MiB = 2**20

def run(*args):
    return subprocess.run([tz, *map(str, args)], check=True, capture_output=True, text=True).stdout

frontier = json.load(open("topologies/frontier.json"))

# ---------------------------------------------------------------- 1. RCCL busbw
print("== 1. RCCL busbw on Frontier, GB/s: published (Singh et al. raw logs, bf16, aws-ofi-rccl) beside the model")
print("   A = the model's flat-ring pricing from documented hardware figures only (NCCL channels: a node's 4 NICs x 25 GB/s,")
print("       a package's 2 x 50 GB/s links; 5 us per ring step; topologies/frontier.json without its curves)")
print("   B = the same flat rings priced from curves measured on 2 and 4 nodes only (16 and 32 GCDs; 1 node from the")
print("       8-GCD row), carried to other GCD counts at constant per-rank block (topology/collective_curve.hpp)")
nominal = dict(frontier); nominal.pop("collective_curves")
nominal["name"] = "frontier-nominal"
small = dict(frontier); small["name"] = "frontier-2-4-nodes"
small["collective_curves"] = []
for c in frontier["collective_curves"]:
    c = dict(c)
    if len(c["tiers"]) == 3:
        c["rows"] = [r for r in c["rows"] if r["group_size"] in (16, 32)]
    small["collective_curves"].append(c)
for name, doc in (("nominal", nominal), ("small", small)):
    json.dump(doc, open(f"{out}/{name}.json", "w"))
published_rows = {"all_gather": [8, 16, 64, 256, 512], "reduce_scatter": [8, 16, 64, 256, 1024]}
sizes = [4, 16, 64, 256, 1024]

def published(op, p, size_mib):
    for c in frontier["collective_curves"]:
        if c["op"] == op and (len(c["tiers"]) == 3) == (p > 8):
            i = c["sizes_bytes"].index(size_mib * MiB)
            return next(r["busbw_GBps"][i] for r in c["rows"] if r["group_size"] == p)

def model(topo, op, nodes):
    run("simulate", "--topology", f"{out}/{topo}.json", "--busbw", op, "--runtime", "deepspeed",
        "--nodes", *nodes, "--sizes-mib", *sizes, "--out", f"{out}/bw-{topo}")
    rows = json.load(open(f"{out}/bw-{topo}/busbw.json"))["rows"]
    return {(r["group_size"], round(r["size_bytes"] / MiB)): r for r in rows}

stats = {"A": [], "B": []}
for op, ps in published_rows.items():
    nodes = [p // 8 for p in ps]
    A, B = model("nominal", op, nodes), model("small", op, nodes)
    print(f"\n   {op}: GCDs | size MiB | published | A model  err    | B model  err")
    for p in ps:
        for s in sizes:
            pub = published(op, p, s)
            a, b = A[(p, s)]["busbw_GBps"], B[(p, s)]["busbw_GBps"]
            ea, eb = 100 * (a / pub - 1), 100 * (b / pub - 1)
            cal = p in (8, 16, 32)
            if s >= 16:
                stats["A"].append((abs(ea), op, p, s))
                if not cal: stats["B"].append((abs(eb), op, p, s))
            bmark = "  (calibration row)" if cal else ("  <- over 25%" if s >= 16 and abs(eb) > 25 else "")
            print(f"   {p:>13} | {s:>8} | {pub:>9.2f} | {a:>7.2f} {ea:>+6.0f}% | {b:>7.2f} {eb:>+6.0f}%{bmark}")
for k, label in (("A", "hardware figures only"), ("B", "calibrated on 2-4 nodes, predicted rows")):
    v = sorted(stats[k], reverse=True)
    within = sum(1 for e in v if e[0] <= 25)
    worst = ", ".join(f"{op} {p} GCDs {s} MiB {e:.0f}%" for e, op, p, s in v[:3])
    print(f"   {k} ({label}): {within} of {len(v)} points from 16 MiB up within 25%; worst: {worst}")

# What a miss of B means: every published multi-node point with the same per-rank block (a ring's step
# time is a function of its block, so B predicts one busbw per block), and the band a prediction for
# that block must fall in to be within 25% of every required point (the tables above, 16 MiB up,
# predicted rows) that shares it.
def same_block(op, block):
    c = next(c for c in frontier["collective_curves"] if c["op"] == op and len(c["tiers"]) == 3)
    return [(r["group_size"], r["busbw_GBps"][i]) for r in c["rows"] for i, sz in enumerate(c["sizes_bytes"])
            if sz == block * r["group_size"]]
for e, op, p, s in sorted(stats["B"], reverse=True):
    if e <= 25: break
    block = s * MiB // p
    pts = same_block(op, block)
    req = [published(op, q, t) for q in published_rows[op] for t in sizes
           if q > 32 and t >= 16 and t * MiB // q == block]
    lo, hi = 0.75 * max(req), 1.25 * min(req)  # |prediction / published - 1| <= 25% at each
    gm = 1.0
    for _, v in pts: gm *= v ** (1 / len(pts))
    print(f"   {op} at a {block // 1024} KiB block per rank, published at every GCD count: "
          + ", ".join(f"{v:.2f} ({q})" for q, v in pts)
          + f"; geometric mean {gm:.2f}, spread -{100 * (1 - min(v for _, v in pts) / gm):.0f}%"
          + f"/+{100 * (max(v for _, v in pts) / gm - 1):.0f}%, not monotone in the GCD count")
    band = f"{lo:.2f}-{hi:.2f} GB/s" if lo <= hi else f"none (it would need at least {lo:.2f} and at most {hi:.2f})"
    print(f"     a per-block prediction within 25% of the {len(req)} required points at this block: {band};"
          f" the 2-4-node calibration measures {dict(pts).get(32, float('nan')):.2f} (32 GCDs)")

# ---------------------------------------------------------------- 2. paper ratios
PAPER = {"zeropp/zero3": 1.405, "three-level/zeropp": 1.71, "efficiency": 0.94}
TL_B = f"{out}/three-level-B.json"
json.dump({"name": "three-level-B", "W_fwd": "node", "W_bwd": "gcd", "G": "system", "O": "system", "qgz": True},
          open(TL_B, "w"))

def sweep(runtime="deepspeed", collectives="flat", mb=1, acc=1, overlap=True, tl="three-level", eff=0.8,
          overhead=0, boundary="exposed", link=1.0):
    d = f"{out}/s{abs(hash((runtime, collectives, mb, acc, overlap, tl, eff, overhead, boundary, link)))}"
    args = ["simulate", "--topology", "frontier", "--model", "gpt-20b", "--nodes", 1, 48,
            "--plans", "zero3", "zeropp", tl, "--collectives", collectives, "--runtime", runtime,
            "--micro-batch", mb, "--accumulation", acc, "--kernel-efficiency", eff, "--message-overhead-us", overhead,
            "--boundary", boundary, "--link-efficiency", link, "--no-charts", "--out", d]
    if not overlap: args.append("--no-overlap")
    run(*args)
    pts = json.load(open(f"{d}/sweep.json"))["points"]
    t = {}
    for p in pts:
        name = p["plan"]["name"]
        name = "three-level" if name.startswith("three-level") else name
        t[(name, p["world_size"])] = p
    r = {"zeropp/zero3": t[("zeropp", 384)]["tflops_per_device"] / t[("zero3", 384)]["tflops_per_device"],
         "three-level/zeropp": t[("three-level", 384)]["tflops_per_device"] / t[("zeropp", 384)]["tflops_per_device"],
         "efficiency": t[("three-level", 384)]["tflops_per_device"] / t[("three-level", 8)]["tflops_per_device"]}
    return t, r

def fmt_ratios(r):
    return "  ".join(f"{k} {r[k]:.3f} ({100 * (r[k] / PAPER[k] - 1):+.0f}%)" for k in PAPER)

print("\n== 2. Xu et al. (2025): 20B GPT (models/gpt-20b.json) on Frontier, 8 and 384 GCDs")
print("   documented inputs: micro-batch 1, accumulation 1, 38.4% of peak (Dash et al. 2023), recompute, prefetch 1,")
print("   measured RCCL curves (topologies/frontier.json), kernel efficiency 0.8, boundary exposed, no per-call overhead")
print("   paper: zeropp/zero3 1.405, three-level/zeropp 1.71, three-level scaling efficiency 8 -> 384 GCDs 0.94")
t, r = sweep()
th, rh = sweep(runtime="tierzero", collectives="hierarchical")
print(f"   {'system':<58} {'TFLOPS 8':>9} {'TFLOPS 384':>11}  bound at 384")
for plan, who in (("zero3", "ZeRO-3 as DeepSpeed runs it (flat RCCL, per-module gathers)"),
                  ("zeropp", "ZeRO++ as DeepSpeed runs it (hpZ node, qwZ, qgZ)"),
                  ("three-level", "the paper's scheme on DeepSpeed (our reading: W gcd, G node, O system)")):
    print(f"   {who:<58} {t[(plan, 8)]['tflops_per_device']:>9.1f} {t[(plan, 384)]['tflops_per_device']:>11.1f}  "
          f"{t[(plan, 384)]['bound']}")
for plan in ("zero3", "zeropp", "three-level"):
    who = f"tierzero {plan} as tierzero runs it (hierarchical)"
    print(f"   {who:<58} {th[(plan, 8)]['tflops_per_device']:>9.1f} {th[(plan, 384)]['tflops_per_device']:>11.1f}  "
          f"{th[(plan, 384)]['bound']}")
print(f"   ratios, systems as they run: {fmt_ratios(r)}")
print(f"   ratios, tierzero's presets:  {fmt_ratios(rh)}")

# ---------------------------------------------------------------- 3. sensitivity
print("\n== 3. sensitivity to what the paper leaves open (DeepSpeed runtime, flat RCCL)")
dims = {"tl": ["three-level", TL_B], "mb": [1, 2, 4], "acc": [1, 8], "overlap": [True, False],
        "eff": [0.8, 0.1], "overhead": [0, 1000], "boundary": ["exposed", "pipelined"], "link": [1.0, 0.5, 0.25]}
results = []
for combo in itertools.product(*dims.values()):
    kw = dict(zip(dims, combo))
    _, rr = sweep(**kw)
    err = max(abs(rr[k] / PAPER[k] - 1) for k in PAPER)
    results.append((err, kw, rr))
results.sort(key=lambda x: x[0])
ok = [x for x in results if x[0] <= 0.15]
def describe(kw):
    return (f"{'A' if kw['tl'] == 'three-level' else 'B'} mb {kw['mb']} acc {kw['acc']:<2} "
            f"{'overlap' if kw['overlap'] else 'no-overlap':<10} eff {kw['eff']:<3} overhead {kw['overhead']:>4} us "
            f"{kw['boundary']:<9} link {kw['link']:<4}")
print("   three-level reading A: W gcd, G node, O system; B: W_fwd node, W_bwd gcd (hpZ-like), G and O system, qgZ")
print(f"   {len(ok)} of {len(results)} combinations reproduce all three figures within 15%; the 12 closest:")
for err, kw, rr in results[:12]:
    print(f"   {describe(kw)}  {fmt_ratios(rr)}  max {100 * err:.0f}%")
for dim, values in dims.items():
    if not ok: break
    share = {str(v if dim != 'tl' else ('A' if v == 'three-level' else 'B')): sum(1 for x in ok if x[1][dim] == v)
             for v in values}
    print(f"   among the reproducing ones, {dim}: {share}")
best_overlap = [x for x in results if x[1]["overlap"] and x[1]["overhead"] == 0 and x[1]["link"] == 1.0]
err, kw, rr = best_overlap[0]
print(f"   closest with DeepSpeed's overlap, no per-call overhead and benchmarked links: {describe(kw)} {fmt_ratios(rr)}")

# What the paper's figures imply, against what the measured collectives allow. Anchor: the model's
# own three-level step at 8 GCDs (one node: compute and the node's links, which the 1-node RCCL
# row measures). The paper's efficiency and ratios then give each system's step at 384 GCDs; less
# the model's compute, quantization kernels and optimizer (the same work on every system), that
# leaves the time the paper's runs spent on communication nobody hid. Beside it: everything the
# system's collectives take at 384 GCDs priced from the measured RCCL curves with nothing hidden
# (--no-overlap, the boundary exposed). Their ratio is how much slower than RCCL's benchmarked
# busbw the paper's communication must have run, at the least, for its figures to hold.
tn, _ = sweep(overlap=False)
tl8 = t[("three-level", 8)]["step_s"]
implied = {"three-level": tl8 / PAPER["efficiency"]}
implied["zeropp"] = implied["three-level"] * PAPER["three-level/zeropp"]
implied["zero3"] = implied["zeropp"] * PAPER["zeropp/zero3"]
print("   what the paper's figures imply at 384 GCDs (anchored on the model's three-level step at 8 GCDs,"
      f" {tl8:.3f} s), documented inputs:")
print(f"   {'system':<12} {'implied step s':>14} {'work s':>8} {'implied comm s':>15} {'RCCL comm s, none hidden':>25}"
      f" {'slower by':>10}")
for plan in ("zero3", "zeropp", "three-level"):
    pt, pn = t[(plan, 384)], tn[(plan, 384)]
    work = pt["compute_s"] + pt["kernel_s"] + pt["optimizer_s"]
    raw = pn["step_s"] - (pn["compute_s"] + pn["kernel_s"] + pn["optimizer_s"])
    need = implied[plan] - work
    verdict = (f"its communication ran {need / raw:.1f}x slower than RCCL's busbw allows with nothing hidden"
               if need > raw else f"it hid at least {100 * (1 - need / raw):.0f}% of its collectives' time")
    print(f"   {plan:<12} {implied[plan]:>14.3f} {work:>8.3f} {need:>15.3f} {raw:>25.3f} {need / raw:>9.2f}x  {verdict}")
documented = {"tl": "three-level", "mb": 1, "acc": 1, "overlap": True, "eff": 0.8, "overhead": 0,
              "boundary": "exposed", "link": 1.0}
forced = [(dim, next(iter(vals))) for dim in dims
          for vals in [{str(x[1][dim]) for x in ok}] if len(vals) == 1 and next(iter(vals)) != str(documented[dim])]
print("   Where the factor is above 1, no assumption about overlap reaches the paper's figure for that")
print("   system: its time is spent outside what the benchmarked network needs (the port's launches,")
print("   allocator, synchronization or kernels, none of them published). The sensitivity above mimics it")
print("   only by moving documented inputs: every reproducing combination has " +
      (", ".join(f"{d} {v}" for d, v in forced) if forced else "nothing in common") +
      (" (documented: " + ", ".join(f"{d} {documented[d]}" for d, _ in forced) + ")." if forced else "."))

# ---------------------------------------------------------------- 4. other published results
print("\n== 4. other published results")
print("   Dash et al. 2023 (22B GPT at 38.38% of peak on Frontier): not predicted. Their run is 3D-parallel (tensor and")
print("   pipeline parallelism), which this model does not price, and its figure is the model's compute input")
print("   (achievable fraction of peak), so predicting it would be circular.")
print("   FSDP paper (Zhao et al. 2023, GPT-175B at 173-186 TFLOPS per A100 on 128-512 GPUs): not predicted. The")
print("   cluster's network (NICs per node, their bandwidth), the micro-batch and the sharding strategy per run are")
print("   needed inputs this project has no documented source for; a topology file with them would price it.")
EOF
