#!/usr/bin/env bash
# Engine overhead and the exposed step boundary: every preset trained by 8 ranks of frontier-mini (1
# thread each, oversubscribed on this machine's cores, launched by Open MPI) against one process with
# 2 threads, the same model and the same global batch (BATCH sequences of SEQ tokens per step: BATCH/8
# per rank). Per run the median over the steps after WARMUP of tokens/s (global), exposed boundary
# and exposed gather seconds (--metrics: rank 0's figures); one single-process run and
# one run per preset form a repeat, the repeats follow each other (interleaved, so a change of load
# hits every configuration), and the table gives per preset the median over repeats of (its tokens/s
# / the same repeat's single-process tokens/s). With COMPARE_BIN (a build of an earlier commit, e.g.
# the engine before its boundary was pipelined) every repeat also runs each preset with that binary,
# and a last table sets the two builds' exposed boundary side by side (median over repeats, and the
# ratio after / before per repeat). The machine is shared: the load average is printed before,
# between and after the repeats, so a reader can judge the figures.
# A second table sets what the engine adds apart from what oversubscription costs: every preset trained
# by 2 ranks x 1 thread (each rank has a core of its own, as each rank has its own GPU on a cluster;
# topology flat, so the multi-tier presets run as their one-tier equivalents) against the same
# single process (table (a)).
# Table (b): the 8-rank frontier-mini runs against the calibrated machine model's prediction of the
# same run on this machine (docs/cost_model.md "Calibration on this machine", formed here as
# scripts/calibrate_machine.sh forms it, for this model, batch and topology): every repeat also
# measures the compute rate R(t) (1-rank `tierzero train` of the same model, micro-batch BATCH/8,
# with t = 1..max(1, cores/8) threads: the threads a rank of the 8 gets) and the collectives
# (`tierzero bench comm` on the same 8 ranks of frontier-mini, every tier's group and the world,
# all-gather and reduce-scatter, bf16, 1 KiB..4 MiB: the model's range sizes; time and CPU per call)
# and the quantization kernels' rate (`tierzero bench quant --isa auto`, median over its rows); after
# the repeats `tierzero simulate --calibrate-from --quant-GBps` (the medians over repeats) writes the
# calibrated frontier-mini, and `tierzero plan` prices every preset on it with the run's inputs
# (micro-batch BATCH/8, accumulation 1, prefetch 1, fraction 1, no recompute, --host-cores C
# --local-ranks 8: the scheduler wait per collective when ranks outnumber cores, and the collectives'
# CPU and kernels charged to compute on the shared cores). Nothing is fitted to the training runs.
# Table (c): per preset and rank, the CPU time per step by term (--metrics cpu_s_per_term_by_rank,
# docs/engine.md "What the engine adds"): median over the counted steps, median over repeats, in ms,
# for the 2-rank and the 8-rank runs; and for table (a) what each pair rank spends besides the
# model's kernels.
#   bash bench/run_engine_overhead.sh [BUILD_DIR] [REPEATS] [STEPS]
# Environment: PRESETS (default: ddp zero1 zero2 zero3 zeropp mics three-level), MODEL (gpt-small),
# SEQ (256), BATCH (8), WARMUP (2), COMPARE_BIN (another tierzero binary, e.g. an older build: its
# runs of the same presets are interleaved into every repeat and reported beside), PREDICT (1; 0
# leaves out table (b) and its measurements; the prediction needs SEQ = the model's n_positions,
# the sequence the cost model prices), KEEP (a directory: the run's files are kept there, among them
# the calibrated topology.json, for `tierzero plan --topology KEEP/topology.json --explain PRESET`).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
steps=${3:-6}
presets=${PRESETS:-ddp zero1 zero2 zero3 zeropp mics three-level}
model=${MODEL:-gpt-small}
seq=${SEQ:-256}
batch=${BATCH:-8}
warmup=${WARMUP:-2}
bin=$build/tierzero
[ -x "$bin" ] || { echo "run_engine_overhead: $bin not found (build the tierzero target)" >&2; exit 2; }
[ -z "${COMPARE_BIN:-}" ] || [ -x "$COMPARE_BIN" ] || { echo "run_engine_overhead: COMPARE_BIN $COMPARE_BIN is not executable" >&2; exit 2; }
predict=${PREDICT:-1}
ranks=8
cores=$(nproc)
(( batch % ranks == 0 )) || { echo "run_engine_overhead: BATCH $batch is not a multiple of $ranks ranks" >&2; exit 2; }
(( steps > warmup )) || { echo "run_engine_overhead: STEPS $steps must exceed WARMUP $warmup" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$predict" = 1 ]; then
  positions=$(python3 - "$model" <<'PY'
import json, os, sys
m = sys.argv[1]
path = m if os.path.isfile(m) else os.path.join("models", m + ".json")
if not os.path.isfile(path):
    sys.exit(f"run_engine_overhead: model {m}: neither a file nor models/{m}.json")
print(json.load(open(path))["n_positions"])
PY
)
  [ "$positions" = "$seq" ] || { echo "run_engine_overhead: SEQ $seq differs from $model's n_positions $positions," \
    "which the cost model prices: set SEQ=$positions or PREDICT=0" >&2; exit 2; }
fi
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP" || { echo "run_engine_overhead: KEEP $KEEP: cannot create the directory" >&2; exit 2; }
  out=$KEEP
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(nproc) cores"
echo "vector extensions: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse|ssse|avx|fma|f16c)' | sort -u | tr '\n' ' ')"
echo "this build: $bin$([ -z "${COMPARE_BIN:-}" ] || echo "; compared with: $COMPARE_BIN")"
echo "model $model, global batch $batch x $seq; $ranks ranks of frontier-mini x 1 thread vs 1 process x 2 threads;" \
     "$repeats repeats of $steps steps (first $warmup not counted)"
echo "load before: $(uptime)"
common=(train --no-progress --model "$model" --seq "$seq" --steps "$steps" --log-every 1000000)
single() {  # $1 binary, $2 metrics file
  "$1" "${common[@]}" --batch "$batch" --threads 2 --metrics "$2" >"$2.log" 2>&1 ||
    { echo "run_engine_overhead: single-process run failed, see:" >&2; cat "$2.log" >&2; exit 1; }
}
pair() {  # $1 preset, $2 metrics file: 2 ranks x 1 thread, one core each
  mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to core \
    -np 2 "$bin" "${common[@]}" --batch $((batch / 2)) --threads 1 --topology flat --plan "$1" \
    --metrics "$2" >"$2.log" 2>&1 ||
    { echo "run_engine_overhead: $1 run on 2 ranks failed, see:" >&2; cat "$2.log" >&2; exit 1; }
}
sharded() {  # $1 binary, $2 preset, $3 metrics file
  mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to none \
    -np $ranks "$1" "${common[@]}" --batch $((batch / ranks)) --threads 1 --topology frontier-mini --emulate \
    --plan "$2" --metrics "$3" >"$3.log" 2>&1 ||
    { echo "run_engine_overhead: $2 run failed, see:" >&2; cat "$3.log" >&2; exit 1; }
}
rate_threads=$((cores / ranks > 1 ? cores / ranks : 1))  # the threads one of 8 ranks gets here
calibrate() {  # $1 repeat: R(t) and the 8-rank collectives, for the prediction
  for ((t = 1; t <= rate_threads; t++)); do
    "$bin" "${common[@]}" --batch $((batch / ranks)) --threads "$t" --metrics "$out/rate.$t.$1.jsonl" \
      >"$out/rate.$t.$1.log" 2>&1 || { echo "run_engine_overhead: rate run failed, see:" >&2; cat "$out/rate.$t.$1.log" >&2; exit 1; }
  done
  mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to none \
    -np $ranks "$bin" bench comm --topology frontier-mini --emulate --ops all_gather reduce_scatter --dtype bf16 \
    --min-bytes 1024 --max-bytes 4M --step-factor 4 --format json >"$out/bench.$1.json" 2>"$out/bench.$1.log" ||
    { echo "run_engine_overhead: bench comm failed, see:" >&2; cat "$out/bench.$1.log" >&2; exit 1; }
  # The quantization kernels' rate on one core (qwZ/qgZ run them inside the collectives, on the cores
  # the ranks compute on): bench quant's kernel GB/s, ISA chosen at run time, 1M elements (a range).
  "$bin" bench quant --isa auto --elements 1048576 --reps 7 >"$out/quant.$1.txt" 2>&1 ||
    { echo "run_engine_overhead: bench quant failed, see:" >&2; cat "$out/quant.$1.txt" >&2; exit 1; }
}
for ((r = 0; r < repeats; r++)); do
  single "$bin" "$out/single.$r.jsonl"
  [ "$predict" != 1 ] || calibrate "$r"
  for p in $presets; do
    sharded "$bin" "$p" "$out/cur.$p.$r.jsonl"
    pair "$p" "$out/pair.$p.$r.jsonl"
    [ -z "${COMPARE_BIN:-}" ] || sharded "$COMPARE_BIN" "$p" "$out/cmp.$p.$r.jsonl"
  done
  echo "load after repeat $((r + 1)): $(uptime)"
done

if [ "$predict" = 1 ]; then
  # The calibrated frontier-mini from the medians over repeats, and every preset priced on it.
  python3 - "$out" "$repeats" "$warmup" "$rate_threads" <<'PY'
import json, statistics, sys
out, repeats, warmup, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
med = statistics.median
docs = [json.load(open(f"{out}/bench.{r}.json")) for r in range(repeats)]
merged = docs[0]
for i, row in enumerate(merged["results"]):
    row["tierzero"]["time_us"] = med(d["results"][i]["tierzero"]["time_us"] for d in docs)
    if all("cpu_us" in d["results"][i]["tierzero"] for d in docs):
        row["tierzero"]["cpu_us"] = med(d["results"][i]["tierzero"]["cpu_us"] for d in docs)
json.dump(merged, open(f"{out}/bench.json", "w"), indent=1)
def gflops(t, r):
    rows = [json.loads(l) for l in open(f"{out}/rate.{t}.{r}.jsonl")][warmup:]
    return med(x["gflops"] for x in rows)
rates = [med(gflops(t, r) for r in range(repeats)) / 1000 for t in range(1, threads + 1)]
open(f"{out}/rates.txt", "w").write(" ".join(f"{x:.6g}" for x in rates))
def quant_GBps(r):  # the median over bench quant's rows (ops, widths, dtypes) of kernel_GBps
    lines = open(f"{out}/quant.{r}.txt").read().splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:2] == ["isa", "op"])
    col = lines[head].split().index("kernel_GBps")
    return med(float(l.split()[col]) for l in lines[head + 1:] if l.strip())
open(f"{out}/quant.txt", "w").write(f"{med(quant_GBps(r) for r in range(repeats)):.6g}")
PY
  "$bin" simulate --topology frontier-mini --calibrate-from "$out/bench.json" --thread-tflops $(cat "$out/rates.txt") \
    --quant-GBps "$(cat "$out/quant.txt")" \
    --host-cores "$cores" --local-ranks $ranks --write-topology "$out/topology.json" >"$out/calibrate.log" 2>&1 ||
    { echo "run_engine_overhead: calibration failed, see:" >&2; cat "$out/calibrate.log" >&2; exit 1; }
  "$bin" plan --topology "$out/topology.json" --world-size $ranks --model "$model" --micro-batch $((batch / ranks)) \
    --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --host-cores "$cores" --local-ranks $ranks --top 1 \
    --format json >"$out/plan.json" 2>"$out/plan.log" ||
    { echo "run_engine_overhead: plan failed, see:" >&2; cat "$out/plan.log" >&2; exit 1; }
  echo
  echo "calibrated frontier-mini (R(t) = $(cat "$out/rates.txt") TFLOPS for t = 1..$rate_threads threads; medians over repeats):"
  sed 's/^/  /' "$out/calibrate.log"
fi

python3 - "$out" "$repeats" "$warmup" "$presets" "${COMPARE_BIN:-}" "$predict" <<'PY'
import json, os, statistics, sys
out, repeats, warmup, presets, compare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
predict = sys.argv[6] == "1"
def run(name):  # medians over the counted steps of one run
    rows = [json.loads(l) for l in open(os.path.join(out, name))][warmup:]
    return {k: statistics.median(r[k] for r in rows) for k in ("tokens_per_s", "exposed_boundary_s", "exposed_gather_s")}
med = statistics.median
single = [run(f"single.{r}.jsonl") for r in range(repeats)]
print(f"\none process, 2 threads: {med(s['tokens_per_s'] for s in single):.0f} tokens/s (median; repeats: "
      + ", ".join(f"{s['tokens_per_s']:.0f}" for s in single) + ")")
kinds = [("pair", "this build, 2 ranks x 1 thread (a core each; topology flat)"),
         ("cur", "this build, 8 ranks x 1 thread (frontier-mini, oversubscribed)")]
kinds += [("cmp", compare + ", 8 ranks x 1 thread")] if compare else []
for tag, label in kinds:
    print(f"\n{label}: ratio = tokens/s over the same repeat's single process")
    print(f"{'preset':<12}{'tokens/s':>10}{'ratio':>8}{'exposed boundary s':>20}{'exposed gather s':>18}  ratios of the repeats")
    for p in presets:
        runs = [run(f"{tag}.{p}.{r}.jsonl") for r in range(repeats)]
        ratios = [x["tokens_per_s"] / s["tokens_per_s"] for x, s in zip(runs, single)]
        print(f"{p:<12}{med(x['tokens_per_s'] for x in runs):>10.0f}{med(ratios):>8.2f}"
              f"{med(x['exposed_boundary_s'] for x in runs):>20.4f}{med(x['exposed_gather_s'] for x in runs):>18.4f}  "
              + ", ".join(f"{q:.2f}" for q in ratios))
if compare:
    print(f"\nexposed boundary s per step (median over repeats of each run's median): this build vs {compare}")
    print(f"{'preset':<12}{'this build':>12}{'compared':>12}{'after/before':>14}  ratios of the repeats")
    for p in presets:
        cur = [run(f"cur.{p}.{r}.jsonl")["exposed_boundary_s"] for r in range(repeats)]
        cmp_ = [run(f"cmp.{p}.{r}.jsonl")["exposed_boundary_s"] for r in range(repeats)]
        ratios = [a / b if b > 0 else float("nan") for a, b in zip(cur, cmp_)]
        print(f"{p:<12}{med(cur):>12.4f}{med(cmp_):>12.4f}{med(ratios):>14.2f}  "
              + ", ".join(f"{q:.2f}" for q in ratios))

def steps_of(name):
    return [json.loads(l) for l in open(os.path.join(out, name))][warmup:]
if predict:
    plan = {p["plan"]["name"]: p for p in json.load(open(os.path.join(out, "plan.json")))["presets"]}
    print("\n(b) 8 ranks of frontier-mini (oversubscribed) against the calibrated machine model's prediction"
          " of the same run: step s (measured: median over repeats of rank 0's median step; predicted:"
          " `tierzero plan` on the calibrated frontier-mini)")
    print("  (compute s includes coll CPU s: the collectives' CPU and quantization kernels on the cores the"
          " ranks share)")
    print(f"{'preset':<12}{'measured s':>11}{'predicted s':>12}{'error':>8}{'compute s':>10}{'coll CPU s':>11}"
          f"{'exposed comm s':>15}  measured s of the repeats")
    for p in presets:
        if p not in plan:
            print(f"{p:<12} (no preset of that name in the plan's output)")
            continue
        runs = [med(x["seconds"] for x in steps_of(f"cur.{p}.{r}.jsonl")) for r in range(repeats)]
        m, c = med(runs), plan[p]
        print(f"{p:<12}{m:>11.4f}{c['step_s']:>12.4f}{100 * (c['step_s'] - m) / m:>+7.1f}%{c['compute_s']:>10.4f}"
              f"{c.get('collective_cpu_s', 0):>11.4f}{c['exposed_comm_s']:>15.4f}  " + ", ".join(f"{x:.3f}" for x in runs))

terms = ["model", "packing", "narrowing", "collective_copies", "quantization", "grad_accumulate",
         "collective_wait", "optimizer", "other"]
short = ["model", "pack", "narrow", "copies", "quant", "accum", "wait", "optim", "other"]
def per_rank(tag, p):
    """[rank] -> {term: ms/step}: median over the counted steps, median over repeats."""
    reps = [steps_of(f"{tag}.{p}.{r}.jsonl") for r in range(repeats)]
    n = len(reps[0][0]["cpu_s_per_term_by_rank"])
    out_ = []
    for k in range(n):
        row = {}
        for t in terms + ["wait_wall_s"]:
            row[t] = 1e3 * med(med(s["cpu_s_per_term_by_rank"][k][t] for s in steps) for steps in reps)
        row["cpu"] = sum(row[t] for t in terms)
        out_.append(row)
    return out_
for tag, label in [("pair", "2 ranks x 1 thread (table (a)'s runs)"), ("cur", "8 ranks of frontier-mini")]:
    print(f"\n(c) CPU ms per step by term, {label}: median over steps, then over repeats; wait wall ="
          " wall time blocked on collectives")
    print(f"{'preset':<12}{'rank':>5}" + "".join(f"{h:>8}" for h in short) + f"{'CPU':>9}{'wait wall':>10}")
    for p in presets:
        for k, row in enumerate(per_rank(tag, p)):
            print(f"{p if k == 0 else '':<12}{k:>5}" + "".join(f"{row[t]:>8.1f}" for t in terms)
                  + f"{row['cpu']:>9.1f}{row['wait_wall_s']:>10.1f}")
print("\n(a) term by term: per pair rank (median over ranks), ms per step: the step, the model's kernels,"
      " the engine's CPU besides them (packing + narrowing + copies + quantization + accumulation +"
      " optimizer + other + CPU in waits), the wall time blocked on collectives; and the single process's step")
single_ms = 1e3 * med(med(x["seconds"] for x in steps_of(f"single.{r}.jsonl")) for r in range(repeats))
print(f"{'preset':<12}{'step':>8}{'model':>8}{'engine CPU':>11}{'wait wall':>10}{'single':>8}  engine CPU by term")
for p in presets:
    rows = per_rank("pair", p)
    step = 1e3 * med(med(x["seconds"] for x in steps_of(f"pair.{p}.{r}.jsonl")) for r in range(repeats))
    eng = {t: med(row[t] for row in rows) for t in terms if t != "model"}
    print(f"{p:<12}{step:>8.1f}{med(row['model'] for row in rows):>8.1f}{sum(eng.values()):>11.1f}"
          f"{med(row['wait_wall_s'] for row in rows):>10.1f}{single_ms:>8.1f}  "
          + " ".join(f"{t} {v:.1f}" for t, v in sorted(eng.items(), key=lambda kv: -kv[1]) if v >= 0.05))
PY
echo "load after: $(uptime)"
