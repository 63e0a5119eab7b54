#!/usr/bin/env bash
# Checkpoint save and load speed beside this machine's sequential write and read bandwidth, measured
# in the same run on the same directory with dd (write: conv=fsync, as a save ends with fsync; read:
# the files first dropped from the page cache with dd iflag=nocache, for dd and for the load alike).
# gpt-small (L6 d384, 10.8 M parameters: 130 MB of fp32 master weights and Adam moments) on 8 ranks
# (mpirun, oversubscribed), zero3 on flat. Prints the CPU's extensions, the load average (1, 5, 15 min)
# before the run and every repeat, every repeat and the medians.
#   bash bench/run_checkpoint_bench.sh [BUILD_DIR] [DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dir=${2:-/tmp/tz_checkpoint_bench}
repeats=${3:-3}
tz=$build/tierzero
[ -x "$tz" ] || { echo "run_checkpoint_bench: $tz not found (build the tierzero target)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to none -np 8)
run=("$tz" train --no-progress --model gpt-small --plan zero3 --seq 64 --batch 1 --log-every 100)
rm -rf "$dir" && mkdir -p "$dir"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $(grep -m1 -o -w -E 'sse4_2|avx2|fma|avx512f|avx512bw' /proc/cpuinfo | sort -u | xargs)"
echo "directory: $dir ($(df -h --output=source,fstype "$dir" | tail -1 | xargs))"

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average before: $(loadavg)"

drop_cache() { for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b - a) / 1e9 }'; }

# Save: REPEATS checkpoints of one run (one step each), each save's time as the run reports it.
out=$("${mpi[@]}" "${run[@]}" --steps "$repeats" --save-every 1 --save-dir "$dir/run" 2>&1) || { echo "$out" >&2; exit 1; }
mapfile -t save_s < <(echo "$out" | sed -n 's/^saved .* in \([0-9.]*\) s,.*/\1/p')
bytes=$(cat "$dir"/run/step_1/rank_*.bin | wc -c)
mb=$((bytes / 1000000))
echo "checkpoint: $bytes bytes in 8 rank files (+ manifest)"

rows=()
for ((r = 0; r < repeats; r++)); do
  rm -f "$dir/dd.bin"
  t0=$(date +%s%N); dd if=/dev/zero of="$dir/dd.bin" bs=1M count="$mb" conv=fsync status=none; t1=$(date +%s%N)
  dd_w=$(seconds "$t0" "$t1")
  drop_cache "$dir/dd.bin"
  t0=$(date +%s%N); dd if="$dir/dd.bin" of=/dev/null bs=1M status=none; t1=$(date +%s%N)
  dd_r=$(seconds "$t0" "$t1")
  step=$((r + 1))
  drop_cache "$dir/run/step_$step"/*
  lout=$("${mpi[@]}" "${run[@]}" --steps "$step" --resume "$dir/run/step_$step" 2>&1) || { echo "$lout" >&2; exit 1; }
  load_s=$(echo "$lout" | sed -n 's/^resumed from .* in \([0-9.]*\) s).*/\1/p')
  rows+=("$dd_w ${save_s[$r]} $dd_r $load_s")
  echo "repeat $((r + 1)): dd write ${dd_w} s, save ${save_s[$r]} s, dd read ${dd_r} s, load ${load_s} s; load average $(loadavg)"
done
printf '%s\n' "${rows[@]}" | python3 -c "
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
b = $bytes
med = [statistics.median(c) for c in zip(*rows)]
ddw, save, ddr, load = (b / s / 1e6 for s in med)
print(f'medians of {len(rows)}: dd write {ddw:.0f} MB/s, save {save:.0f} MB/s = {save / ddw:.2f} of dd; '
      f'dd read {ddr:.0f} MB/s, load {load:.0f} MB/s = {load / ddr:.2f} of dd')
"
rm -rf "$dir"
