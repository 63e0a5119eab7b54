#!/usr/bin/env bash
# Long sequences on one process: gpt-tiny's shape (L4 d128 H4, byte vocabulary) with n_positions
# raised to 8192, trained at T = 256, 1024, 4096 and 8192 with one sequence per step, on the fortunes
# corpus. Tiled attention keeps no T x T matrix, so peak RSS should grow linearly with T, and the
# FLOP rate should hold as attention's share of the work grows. Prints, per T: the peak RSS (from
# /usr/bin/time), its ratio to the T = 1024 run, tokens/s (the run's median over its steps after the
# first), the model FLOPs per token and the FLOP rate, and its ratio to the T = 1024 run.
# Model FLOPs per token (training, forward + backward = 3x forward): 6 (12 L C^2 + V C) for the
# linear layers and the LM head, plus 12 L T C for attention's two products counted dense (the
# convention of docs/model.md; the causal kernel does about half of that work).
#   bash bench/run_long_sequence.sh [BUILD_DIR] [THREADS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
threads=${2:-1}
steps=${3:-6}
tz=$build/tierzero
[ -x "$tz" ] || { echo "run_long_sequence: $tz not found (build the tierzero target)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "run_long_sequence: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $(grep -m1 -o -w -E 'avx2|fma|avx512f|avx512bw' /proc/cpuinfo | sort -u | xargs)"
echo "threads: $threads; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
L=4 C=128 V=256
cat >"$work/model.json" <<JSON
{"name": "gpt-tiny-8k", "n_layer": $L, "n_embd": $C, "n_head": 4, "n_positions": 8192, "vocab_size": $V}
JSON
printf '%6s %12s %8s %10s %14s %10s %8s\n' T peak_RSS_MiB x_T1024 tokens/s FLOPs/token GFLOP/s x_T1024
declare -A rss rate
for T in 256 1024 4096 8192; do
  out=$(/usr/bin/time -f 'maxrss_kb %M' "$tz" train --no-progress --model "$work/model.json" --seq "$T" --batch 1 \
    --steps "$steps" --warmup 1 --log-every 1 --threads "$threads" 2>&1) || { echo "$out" >&2; exit 1; }
  kb=$(awk '/^maxrss_kb/ {print $2}' <<<"$out")
  tps=$(grep -o '| [0-9]* tok/s' <<<"$out" | awk 'NR > 1 {print $2}' | sort -n |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
  fpt=$(awk -v L=$L -v C=$C -v V=$V -v T="$T" 'BEGIN { printf "%.0f", 6 * (12 * L * C * C + V * C) + 12 * L * T * C }')
  rss[$T]=$kb
  rate[$T]=$(awk -v t="$tps" -v f="$fpt" 'BEGIN { printf "%.3f", t * f / 1e9 }')
  x_rss=- x_rate=-
  if [ -n "${rss[1024]:-}" ]; then
    x_rss=$(awk -v a="$kb" -v b="${rss[1024]}" 'BEGIN { printf "%.2f", a / b }')
    x_rate=$(awk -v a="${rate[$T]}" -v b="${rate[1024]}" 'BEGIN { printf "%.2f", a / b }')
  fi
  printf '%6d %12.1f %8s %10.0f %14d %10.3f %8s\n' "$T" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" \
    "$x_rss" "$tps" "$fpt" "${rate[$T]}" "$x_rate"
done
