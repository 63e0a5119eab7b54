#!/usr/bin/env bash
# Calibration on this machine (docs/cost_model.md, "Calibration on this machine"): predicted beside
# measured step time of the real engine at 1, 2, 4, 8 ranks, gpt-tiny, zero3, on the `flat` topology
# (one tier: every rank on this host; Open MPI's shared memory underneath).
#   1. compute: 1-rank `tierzero train` runs with 1..C threads (C = cores): R(t) = median model-step
#      rate (model FLOPs / step time) over the steps after the warm-up, median over REPS runs. The
#      core-sharing model (perf/calibration.hpp) gives one rank's rate at k ranks: R(max(1, C/k)) x
#      min(1, C/k). As a check of that model, k independent 1-rank runs side by side, with the
#      threads each rank of a k-rank job gets, measure the shared rate directly (median over ranks and
#      REPS rounds; it also sees whatever else loads the host at that time): the table shows the
#      prediction with that rate too ("side-by-side rate");
#   2. per rank count k > 1: `tierzero bench comm` (all-gather and reduce-scatter, bf16 as the engine's
#      weights and gradients travel, 1 KiB..1 MiB: the step's range sizes) on the same k ranks, REPS
#      times; the median time per row is kept;
#   3. `tierzero simulate --calibrate-from` writes the calibrated topology: the tier's link fitted from
#      the all-gathers, its reduction rate from the reduce-scatters, the device rate from R(t) and the
#      core-sharing model; nothing is fitted to the training runs;
#   4. the real engine: `tierzero train --model gpt-tiny --plan zero3` under mpirun -np k (the
#      documented flags plus --bind-to none, see mpirun_k below), REPS runs
#      (interleaved over k); measured = median over runs of the median step time after the warm-up;
#   5. `tierzero plan` on the calibrated topology with the train run's exact inputs (micro-batch 8,
#      accumulation 1, sequence = n_positions = 128, no recompute, bf16, prefetch 1, fraction 1) and the
#      host's sharing (--host-cores C --local-ranks k: the scheduler wait per collective call when k > C,
#      (k/C - 1) slices of Linux's base slice; docs/cost_model.md);
# then prints ranks | measured | predicted | error with the breakdown, the engine's own exposed
# weight-gather wait, and the bytes per rank per step of the engine beside the plan's (equal by
# design). The load average (uptime) is recorded before every phase and printed with the table: a
# machine shared with other work gives figures that say more about that work than about the model.
# About 3 minutes on a quiet 2-core machine.
# Usage: bash scripts/calibrate_machine.sh [OUT_DIR]     (default: calibrate-out)
# Environment: TZ_BIN (default build/tierzero), RANKS (default "1 2 4 8"), STEPS (20), WARMUP (5),
#              REPS (3), CORES (default: nproc).
# A measurement, not a test: not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TZ_BIN:-build/tierzero}
out=${1:-calibrate-out}
ranks=${RANKS:-1 2 4 8}
steps=${STEPS:-20}
warmup=${WARMUP:-5}
reps=${REPS:-3}
cores=${CORES:-$(nproc)}
if [ -n "${TZ_BIN:-}" ]; then  # a binary named by the user must be one: no silent build of another
  [ -f "$bin" ] && [ -x "$bin" ] || { echo "calibrate_machine: $bin is not an executable tierzero binary" >&2; exit 2; }
elif [ ! -x "$bin" ]; then
  bash scripts/build.sh build >/dev/null
fi
mkdir -p "$out"
: >"$out/load.txt"
load() { echo "$1: $(uptime | sed 's/.*load average: //')" | tee -a "$out/load.txt"; }
# --bind-to none: Open MPI binds each rank to one core when np <= 2, so a 1-rank job's two threads
# (tierzero train's default, cores / local ranks) would share one core (0.076 s instead of 0.054 s per
# step here); unbound, each rank's threads get the cores the core-sharing model gives them.
mpirun_k() {
  mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to none -np "$@"
}
train_args=(train --model gpt-tiny --plan zero3 --batch 8 --grad-accum 1 --steps "$steps" --no-progress
  --log-every 1000)
# shellcheck source=scripts/calibration_steps.sh
source scripts/calibration_steps.sh  # median_of, measure_compute_rates (the working directory is the root)

load "start"
measure_compute_rates

load "side-by-side"
echo "== check of the core-sharing model: k independent 1-rank runs side by side"
declare -A shared
for k in $ranks; do
  t=$((cores / k > 1 ? cores / k : 1))
  files=()
  for rep in $(seq 1 "$reps"); do
    pids=()
    for i in $(seq 1 "$k"); do
      "$bin" "${train_args[@]}" --threads "$t" --seed "$i" --metrics "$out/shared_k${k}_r${rep}_$i.jsonl" \
        >/dev/null &
      pids+=($!) files+=("$out/shared_k${k}_r${rep}_$i.jsonl")
    done
    for p in "${pids[@]}"; do wait "$p"; done
  done
  shared[$k]=$(median_of gflops "${files[@]}")
  echo "  k=$k, $t thread(s) each: measured $(printf %.1f "${shared[$k]}") GFLOP/s per rank;" \
    "model $(python3 -c "print(f'{1000 * ${rates[$((t - 1))]} * min(1, $cores / $k):.1f}')")"
done

load "bench comm"
for k in $ranks; do
  echo "== $k rank(s): bench comm and calibrated topology"
  if [ "$k" -gt 1 ]; then
    for rep in $(seq 1 "$reps"); do
      mpirun_k "$k" "$bin" bench comm --topology flat --groups world --ops all_gather reduce_scatter \
        --dtype bf16 --min-bytes 1024 --max-bytes 1048576 --step-factor 4 --format json \
        >"$out/bench_k${k}_r$rep.json" 2>/dev/null
    done
    python3 - "$out/bench_k$k.json" "$out"/bench_k"${k}"_r*.json <<'EOF'
import json, statistics, sys
docs = [json.load(open(f)) for f in sys.argv[2:]]
merged = docs[0]
for i, row in enumerate(merged["results"]):
    row["tierzero"]["time_us"] = statistics.median(d["results"][i]["tierzero"]["time_us"] for d in docs)
    if all("cpu_us" in d["results"][i]["tierzero"] for d in docs):
        row["tierzero"]["cpu_us"] = statistics.median(d["results"][i]["tierzero"]["cpu_us"] for d in docs)
json.dump(merged, open(sys.argv[1], "w"), indent=1)
EOF
  else
    echo '{"results": []}' >"$out/bench_k$k.json"  # one rank: no communication to measure
  fi
  "$bin" simulate --topology flat --calibrate-from "$out/bench_k$k.json" --thread-tflops "${rates[@]}" \
    --host-cores "$cores" --local-ranks "$k" --write-topology "$out/topology_k$k.json" | sed 's/^/  /'
  # The same with the side-by-side rate as the device rate (the check above, for comparison).
  "$bin" simulate --topology flat --calibrate-from "$out/bench_k$k.json" --write-topology \
    "$out/topology_k${k}_side.json" --measured-tflops "$(python3 -c "print(${shared[$k]} / 1000)")" >/dev/null
  for variant in "" _side; do
    "$bin" plan --topology "$out/topology_k$k$variant.json" --world-size "$k" --model gpt-tiny --micro-batch 8 \
      --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --host-cores "$cores" --local-ranks "$k" --top 1 \
      --format json >"$out/plan_k$k$variant.json"
  done
done

load "engine"
echo "== the real engine: $reps runs per rank count, interleaved"
for rep in $(seq 1 "$reps"); do
  for k in $ranks; do
    mpirun_k "$k" "$bin" "${train_args[@]}" --metrics "$out/train_k${k}_r$rep.jsonl" >"$out/train_k${k}_r$rep.log"
  done
done

load "end"
echo
echo "== gpt-tiny, zero3, batch 8 x 128 tokens per rank, bf16: median step time (steps $((warmup + 1))..$steps, $reps runs)"
echo "   load averages (1, 5, 15 min) during the run:"
sed 's/^/   /' "$out/load.txt"
python3 - "$out" "$ranks" "$warmup" "$reps" <<'EOF'
import json, statistics, sys
out, ranks, warmup, reps = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4])
med = statistics.median
print(f"{'ranks':>5} | {'measured s':>10} | {'predicted s':>11} | {'error %':>7} | {'compute s':>9} | "
      f"{'exposed comm s':>14} | {'engine gather wait s':>20} | {'side-by-side rate: predicted s':>30} | "
      f"{'error %':>7} | {'runs (s)':>22} | bytes engine = plan")
def zero3(path):
    return next(p for p in json.load(open(path))["presets"] if p["plan"]["name"] == "zero3")
for k in ranks:
    runs = [[json.loads(line) for line in open(f"{out}/train_k{k}_r{r}.jsonl")][warmup:] for r in range(1, reps + 1)]
    per_run = [med(s["seconds"] for s in steps) for steps in runs]
    measured = med(per_run)
    gather = med(med(s["exposed_gather_s"] for s in steps) for steps in runs)
    engine_bytes = sum(runs[0][-1]["bytes_per_tier"].values())
    cost, side = zero3(f"{out}/plan_k{k}.json"), zero3(f"{out}/plan_k{k}_side.json")
    plan_bytes = sum(t["bytes"] for t in cost["tiers"])
    err = lambda c: 100 * (c["step_s"] - measured) / measured
    spread = " ".join(f"{s:.3f}" for s in per_run)
    print(f"{k:>5} | {measured:>10.4f} | {cost['step_s']:>11.4f} | {err(cost):>+7.1f} | {cost['compute_s']:>9.4f} | "
          f"{cost['exposed_comm_s']:>14.4f} | {gather:>20.4f} | {side['step_s']:>30.4f} | {err(side):>+7.1f} | "
          f"{spread:>22} | {engine_bytes:.0f} {'=' if engine_bytes == plan_bytes else '!='} {plan_bytes:.0f}")
EOF
echo "wrote $out/"
