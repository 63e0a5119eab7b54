#!/usr/bin/env bash
# Calibrated prediction across hosts (docs/cluster.md, "Calibrated prediction across hosts"): the cost
# model's step time for a run on the testbed of scripts/cluster.sh (HOSTS hosts x RANKS_PER_HOST ranks
# on a shaped link, host tier from the real hostnames, no --emulate) beside the measured step.
#   1. compute: 1-rank `tierzero train` runs on this machine with 1..C threads (C = cores): R(t) =
#      median model-step rate after the warm-up, median over REPS runs (as scripts/calibrate_machine.sh);
#   2. the testbed comes up (HOSTS hosts, --link LINK); `tierzero bench comm` runs across the hosts on
#      every tier of TOPOLOGY (within a host: shared memory; the tiers above it: TCP through the shaped
#      link, every group of a tier at once, so the ranks of a host share its link as in training),
#      all-gather and reduce-scatter in bf16, 1 KiB..1 MiB (gpt-tiny's ranges), REPS runs, the median
#      per row (an all-reduce is priced as a reduce-scatter then an all-gather from their curves);
#   3. `tierzero simulate --calibrate-from` writes the calibrated topology: per tier the measured
#      curves, the link and reduction rate fitted from them, the device rate from R(t) and the
#      core-sharing model for all the testbed's ranks on this machine's C cores (the hosts are
#      namespaces of one machine: every rank shares its cores);
#   4. `tierzero plan` on that topology with the training run's inputs (micro-batch, accumulation 1,
#      sequence 128, no recompute, bf16, prefetch 1, fraction 1) and the host sharing (--host-cores C
#      --local-ranks HOSTS x RANKS_PER_HOST: a scheduler wait per collective call);
#   5. the real engine on the testbed: `tierzero train --model gpt-tiny --plan P --topology TOPOLOGY`
#      for every plan of PLANS, REPS runs interleaved; measured = median over runs of the median step
#      after the warm-up.
# Nothing of the prediction is fitted to the training runs. Prints, per plan, measured | predicted |
# error and the prediction's terms: compute, exposed communication per tier (host tier = within a
# host; the others cross hosts) and the scheduler's share of it, with the load average of every phase.
# Usage: bash scripts/calibrate_cluster.sh [OUT_DIR]         (default: calibrate-cluster-out)
# Environment: TZC_PREFIX, TZC_SUBNET (the testbed's names, scripts/cluster.sh), TZ_BIN (default
#   build/tierzero), HOSTS (4), RANKS_PER_HOST (2), LINK (300mbit), PLANS ("zero3 three-level"),
#   TOPOLOGY (tests/cluster/topology_pairs.json), BATCH (8), STEPS (12), WARMUP (4), REPS (3),
#   CORES (default: nproc), MIN_BYTES, MAX_BYTES (bench sizes, 1K and 1M), MAX_ERROR_PCT (unset: no check; else exit 1 when a plan's |error| is above it).
# Needs root and network namespaces (exit 77 otherwise, as scripts/cluster.sh). Takes its own testbed
# down on exit. About 3 minutes on a quiet 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TZ_BIN:-build/tierzero}
out=${1:-calibrate-cluster-out}
hosts=${HOSTS:-4}
per_host=${RANKS_PER_HOST:-2}
link=${LINK:-300mbit}
plans=${PLANS:-zero3 three-level}
topology=${TOPOLOGY:-tests/cluster/topology_pairs.json}
batch=${BATCH:-8}
steps=${STEPS:-12}
warmup=${WARMUP:-4}
reps=${REPS:-3}
cores=${CORES:-$(nproc)}
max_error=${MAX_ERROR_PCT:-}
min_bytes=${MIN_BYTES:-1K}
max_bytes=${MAX_BYTES:-1M}
cluster=scripts/cluster.sh
np=$((hosts * per_host))
[ -f "$bin" ] && [ -x "$bin" ] || { echo "calibrate_cluster: $bin is not an executable tierzero binary" >&2; exit 2; }
[ -f "$topology" ] || { echo "calibrate_cluster: TOPOLOGY $topology: no such file" >&2; exit 2; }
for v in hosts per_host batch steps reps cores; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "calibrate_cluster: ${v^^} must be a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $warmup =~ ^[0-9]+$ ]] && [ "$warmup" -lt "$steps" ] ||
  { echo "calibrate_cluster: WARMUP must be an integer below STEPS ($steps), got '$warmup'" >&2; exit 2; }
[ -z "$max_error" ] || [[ $max_error =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "calibrate_cluster: MAX_ERROR_PCT must be a number, got '$max_error'" >&2; exit 2; }
mkdir -p "$out"
: >"$out/load.txt"
load() { echo "$1: $(uptime | sed 's/.*load average: //')" | tee -a "$out/load.txt"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

train_args=(train --model gpt-tiny --batch "$batch" --grad-accum 1 --steps "$steps" --no-progress --log-every 1000)
# shellcheck source=scripts/calibration_steps.sh
source scripts/calibration_steps.sh  # median_of, measure_compute_rates (the working directory is the root)

load "start"
measure_compute_rates

load "testbed"
trap 'bash "$cluster" down >/dev/null 2>&1 || true' EXIT
set +e
up_out=$(bash "$cluster" up "$hosts" --ranks-per-host "$per_host" --link "$link" 2>&1)
rc=$?
set -e
echo "$up_out" | tail -2
[ $rc -ne 77 ] || { trap - EXIT; echo "SKIP: $up_out"; exit 77; }
[ $rc -eq 0 ] || { echo "calibrate_cluster: cluster.sh up exited $rc" >&2; exit 1; }

load "bench comm"
tiers=$(python3 -c "import json, sys; print(' '.join(t['name'] for t in json.load(open(sys.argv[1]))['tiers']))" "$topology")
echo "== bench comm across $hosts hosts x $per_host ranks at $link: groups $tiers ($reps runs)"
for rep in $(seq 1 "$reps"); do
  bash "$cluster" run -np "$np" "$bin" bench comm --topology "$topology" --groups $tiers \
    --ops all_gather reduce_scatter --dtype bf16 --min-bytes "$min_bytes" --max-bytes "$max_bytes" --step-factor 4 \
    --iters 10 --round-seconds 0.1 --warmup 2 --format json >"$out/bench_r$rep.json" 2>"$out/bench_r$rep.err" ||
    { echo "calibrate_cluster: bench comm failed: $(tail -3 "$out/bench_r$rep.err")" >&2; exit 1; }
done
# The median time per row over the runs: the links are fitted from it, the curves are its rows.
python3 - "$out/bench.json" "$out"/bench_r*.json <<'EOF'
import json, statistics, sys
docs = [json.load(open(f)) for f in sys.argv[2:]]
merged = docs[0]
for i, row in enumerate(merged["results"]):
    row["tierzero"]["time_us"] = statistics.median(d["results"][i]["tierzero"]["time_us"] for d in docs)
    if all("cpu_us" in d["results"][i]["tierzero"] for d in docs):
        row["tierzero"]["cpu_us"] = statistics.median(d["results"][i]["tierzero"]["cpu_us"] for d in docs)
json.dump(merged, open(sys.argv[1], "w"), indent=1)
EOF
"$bin" simulate --topology "$topology" --calibrate-from "$out/bench.json" --thread-tflops "${rates[@]}" \
  --host-cores "$cores" --local-ranks "$np" --write-topology "$out/topology.json" | sed 's/^/  /'
"$bin" plan --topology "$out/topology.json" --world-size "$np" --model gpt-tiny --micro-batch "$batch" \
  --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --host-cores "$cores" --local-ranks "$np" --top 1 \
  --format json >"$out/plan.json"
# The same without the host sharing: the difference is the scheduler's term.
"$bin" plan --topology "$out/topology.json" --world-size "$np" --model gpt-tiny --micro-batch "$batch" \
  --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --top 1 --format json >"$out/plan_unshared.json"
for p in $plans; do
  "$bin" plan --topology "$out/topology.json" --world-size "$np" --model gpt-tiny --micro-batch "$batch" \
    --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --host-cores "$cores" --local-ranks "$np" \
    --explain "$p" >"$out/explain_$p.txt"
done

load "engine"
echo "== the real engine on the testbed: $reps runs per plan, interleaved; before each round, $np independent"
echo "   1-rank runs side by side (no communication) measure one rank's compute rate as the machine shares it then"
threads=$((cores / per_host > 1 ? cores / per_host : 1))  # train's default: cores / ranks of the host
side_files=()
for rep in $(seq 1 "$reps"); do
  pids=()
  for i in $(seq 1 "$np"); do
    "$bin" "${train_args[@]}" --threads "$threads" --seed "$i" --metrics "$out/side_r${rep}_$i.jsonl" >/dev/null &
    pids+=($!) side_files+=("$out/side_r${rep}_$i.jsonl")
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for p in $plans; do
    bash "$cluster" run -np "$np" "$bin" "${train_args[@]}" --plan "$p" --topology "$topology" \
      --metrics "$out/train_${p}_r$rep.jsonl" >"$out/train_${p}_r$rep.log" 2>&1 ||
      { echo "calibrate_cluster: training $p failed: $(tail -3 "$out/train_${p}_r$rep.log")" >&2; exit 1; }
  done
done
side=$(median_of gflops "${side_files[@]}")
echo "  side-by-side rate: $(printf %.2f "$side") GFLOP/s per rank (core-sharing model from R(t):" \
  "$(python3 -c "print(f'{1000 * ${rates[$((threads - 1))]} * min(1, $cores / $np):.2f}')"))"
"$bin" simulate --topology "$topology" --calibrate-from "$out/bench.json" --measured-tflops \
  "$(python3 -c "print($side / 1000)")" --write-topology "$out/topology_side.json" >/dev/null
"$bin" plan --topology "$out/topology_side.json" --world-size "$np" --model gpt-tiny --micro-batch "$batch" \
  --accumulation 1 --prefetch 1 --fraction 1 --no-recompute --host-cores "$cores" --local-ranks "$np" --top 1 \
  --format json >"$out/plan_side.json"
load "end"

echo
echo "== gpt-tiny, batch $batch x 128 tokens per rank, bf16, $hosts hosts x $per_host ranks, link $link:" \
  "median step (steps $((warmup + 1))..$steps, $reps runs)"
echo "   load averages (1, 5, 15 min) during the run:"
sed 's/^/   /' "$out/load.txt"
python3 - "$out" "$plans" "$warmup" "$reps" "$topology" "$max_error" <<'EOF'
import json, statistics, sys
out, plans, warmup, reps, topo_path, max_error = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
med = statistics.median
topo = json.load(open(topo_path))
host_tier = topo["host_tier"]
presets = {p["plan"]["name"]: p for p in json.load(open(f"{out}/plan.json"))["presets"]}
unshared = {p["plan"]["name"]: p for p in json.load(open(f"{out}/plan_unshared.json"))["presets"]}
side = {p["plan"]["name"]: p for p in json.load(open(f"{out}/plan_side.json"))["presets"]}
print(f"{'plan':>12} | {'measured s':>10} | {'predicted s':>11} | {'error %':>7} | {'compute s':>9} | "
      f"{'exposed in host s':>17} | {'exposed across s':>16} | {'scheduler s':>16} | {'engine gather wait s':>20} | "
      f"{'side-by-side rate: predicted s':>30} | {'error %':>7} | {'compute s':>9} | {'runs (s)':>20} | bytes engine = plan")
worst = 0.0
for p in plans:
    runs = [[json.loads(line) for line in open(f"{out}/train_{p}_r{r}.jsonl")][warmup:] for r in range(1, reps + 1)]
    per_run = [med(s["seconds"] for s in steps) for steps in runs]
    measured = med(per_run)
    gather = med(med(s["exposed_gather_s"] for s in steps) for steps in runs)
    engine_bytes = sum(runs[0][-1]["bytes_per_tier"].values())
    cost = presets[p]
    plan_bytes = sum(t["bytes"] for t in cost["tiers"])
    inside = sum(t.get("exposed_s", 0) for t in cost["tiers"] if t["tier"] == host_tier)
    across = sum(t.get("exposed_s", 0) for t in cost["tiers"] if t["tier"] != host_tier)
    sched = cost["step_s"] - unshared[p]["step_s"]  # what the scheduler's wait adds to the step
    err = 100 * (cost["step_s"] - measured) / measured
    side_err = 100 * (side[p]["step_s"] - measured) / measured
    worst = max(worst, abs(side_err))
    spread = " ".join(f"{s:.3f}" for s in per_run)
    print(f"{p:>12} | {measured:>10.4f} | {cost['step_s']:>11.4f} | {err:>+7.1f} | {cost['compute_s']:>9.4f} | "
          f"{inside:>17.4f} | {across:>16.4f} | {sched:>16.4f} | {gather:>20.4f} | "
          f"{side[p]['step_s']:>30.4f} | {side_err:>+7.1f} | {side[p]['compute_s']:>9.4f} | {spread:>20} | "
          f"{engine_bytes:.0f} {'=' if engine_bytes == plan_bytes else '!='} {plan_bytes:.0f}")
if max_error:
    if worst > float(max_error):
        print(f"FAIL: a prediction is {worst:.1f}% off the measured step (limit {max_error}%)")
        sys.exit(1)
    print(f"ok: every prediction within {max_error}% of the measured step (worst {worst:.1f}%)")
EOF
echo "wrote $out/ (explain_PLAN.txt: each plan's breakdown by collective and tier)"
