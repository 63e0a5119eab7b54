#!/usr/bin/env bash
# Model benchmark driver (issue 4, item 7): for each config (tiny, small) and thread count (1, 2), runs
# OpenBLAS sgemm (the machine's peak on the MLP shape), tierzero's training step and PyTorch's, in
# turn, REPEATS times (interleaved, so load changes hit both), and prints the medians as a table with
# the tierzero/PyTorch ratio and the fraction of the sgemm peak the step reaches.
#   bash bench/run_model_bench.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
bench=$build/bench/tz_model_bench
[ -x "$bench" ] || { echo "run_model_bench: $bench not found (build the tz_model_bench target)" >&2; exit 2; }
py=/usr/bin/python3
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for config in tiny small; do
  for threads in 1 2; do
    steps=10; [ "$config" = small ] && steps=5
    for ((r = 0; r < repeats; r++)); do
      "$bench" --config $config --threads $threads --sgemm >>"$results"
      "$bench" --config $config --threads $threads --steps $steps >>"$results"
      OMP_NUM_THREADS=$threads $py bench/torch_gpt.py --config $config --threads $threads --steps $steps >>"$results"
    done
  done
done
$py - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(impl, cfg, th, key):
    v = [r[key] for r in rows if r["impl"] == impl and r["config"] == cfg and r["threads"] == th]
    return statistics.median(v) if v else float("nan")
print("FLOPs per step = B*T*(72*L*C^2 + 12*L*T*C + 6*V*C); medians of interleaved repeats")
print(f"{'config':<7}{'thr':>4}{'tz tok/s':>10}{'torch tok/s':>12}{'tz/torch':>9}{'tz GFLOP/s':>11}"
      f"{'torch GFLOP/s':>14}{'sgemm GFLOP/s':>14}{'tz/peak':>8}")
for cfg in ("tiny", "small"):
    for th in (1, 2):
        tz, pt = med("tierzero", cfg, th, "tokens_per_s"), med("pytorch", cfg, th, "tokens_per_s")
        tzg, ptg, pk = med("tierzero", cfg, th, "gflops"), med("pytorch", cfg, th, "gflops"), med("sgemm", cfg, th, "gflops")
        print(f"{cfg:<7}{th:>4}{tz:>10.0f}{pt:>12.0f}{tz/pt:>9.2f}{tzg:>11.1f}{ptg:>14.1f}{pk:>14.1f}{tzg/pk:>8.2f}")
PY
