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
# single process.
#   bash bench/run_engine_overhead.sh [BUILD_DIR] [REPEATS] [STEPS]
# Environment: PRESETS (default: ddp zero1 zero2 zero3 zeropp mics three-level), MODEL (gpt-small),
# SEQ (256), BATCH (8), WARMUP (2), COMPARE_BIN (another tierzero binary, e.g. an older build: its
# runs of the same presets are interleaved into every repeat and reported beside).
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
ranks=8
(( batch % ranks == 0 )) || { echo "run_engine_overhead: BATCH $batch is not a multiple of $ranks ranks" >&2; exit 2; }
(( steps > warmup )) || { echo "run_engine_overhead: STEPS $steps must exceed WARMUP $warmup" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

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
for ((r = 0; r < repeats; r++)); do
  single "$bin" "$out/single.$r.jsonl"
  for p in $presets; do
    sharded "$bin" "$p" "$out/cur.$p.$r.jsonl"
    pair "$p" "$out/pair.$p.$r.jsonl"
    [ -z "${COMPARE_BIN:-}" ] || sharded "$COMPARE_BIN" "$p" "$out/cmp.$p.$r.jsonl"
  done
  echo "load after repeat $((r + 1)): $(uptime)"
done

python3 - "$out" "$repeats" "$warmup" "$presets" "${COMPARE_BIN:-}" <<'PY'
import json, os, statistics, sys
out, repeats, warmup, presets, compare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
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
PY
echo "load after: $(uptime)"
