#!/usr/bin/env bash
# Model benchmark driver: for each model (presets of models/: gpt-tiny, gpt-small, gpt2 = GPT-2 124M, or
# benchmark configs of bench/configs/: llama-bench, at the batch and sequence length of shape() below) and
# thread count (1, 2) runs, in turn and REPEATS times (interleaved, so load changes hit every column alike),
# memcpy, OpenBLAS sgemm on the MLP's first product (the peak the step is held to), tierzero's training
# step (tz_model_bench) and PyTorch's (bench/torch_gpt.py, same model, same FLOP count per family:
# model/flops.hpp); prints the medians as a table with the tierzero/PyTorch ratio and the fraction of the
# same run's sgemm rate the step reaches, then each layer slot's time per step against its limit on this CPU
# (tz_model_bench --limits) for each config.
#   bash bench/run_model_bench.sh [BUILD_DIR] [REPEATS] [MODELS]   (MODELS default "gpt-tiny gpt-small gpt2")
#   bash bench/run_model_bench.sh build-rel 3 "gpt-small llama-bench"
#
# PyTorch runs in its best configuration on this machine, so that the baseline is one:
# - OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = threads (and torch.set_num_threads,
#   set_num_interop_threads(1) in the script). Debian's PyTorch runs an OpenMP pool for its own kernels
#   beside OpenBLAS's pthreads pool for matrix products; with OpenMP's default wait policy its threads
#   spin between parallel regions and take the cores from OpenBLAS: 1.4-2.5x slower steps on 2 cores.
# - OPENBLAS_CORETYPE: OpenBLAS 0.3.21 does not know newer CPUs and falls back to its SSE3 "Prescott"
#   kernels there (about 4x slower sgemm than its AVX-512 ones on such a CPU). The script measures
#   sgemm with OpenBLAS's own choice and with each kernel family this CPU can run, and gives the
#   fastest to PyTorch and to the sgemm column.
# - ATEN_CPU_CAPABILITY: PyTorch 1.13 uses its AVX2 kernels even where AVX-512 exists; the script times
#   a tiny step both ways and keeps the faster.
# tierzero does not use OpenBLAS for the model (its own gemm, model/gemm.hpp), so its figures do not
# depend on OPENBLAS_CORETYPE; it runs under the same environment.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
configs=${3:-gpt-tiny gpt-small gpt2}
# The model argument of both tools: bench/configs/NAME.json when there is one (benchmark shapes, not user
# presets), else the preset NAME of models/.
model_arg() {
  if [ -f "bench/configs/$1.json" ]; then echo "bench/configs/$1.json"; else echo "$1"; fi
}
# Batch and sequence length per model.
shape() {
  case $1 in
    gpt-tiny) echo "--batch 8 --seq 128" ;;
    gpt2 | gpt2-small) echo "--batch 4 --seq 256" ;;
    *) echo "--batch 8 --seq 256" ;;
  esac
}
bench=$build/bench/tz_model_bench
[ -x "$bench" ] || { echo "run_model_bench: $bench not found (build the tz_model_bench target)" >&2; exit 2; }
py=/usr/bin/python3
"$py" -c "import torch" 2>/dev/null ||
  { echo "run_model_bench: $py cannot import torch (TZ_WITH_TORCH=1 bash scripts/install_deps.sh)" >&2; exit 2; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT
export OMP_WAIT_POLICY=PASSIVE

flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "vector extensions: $(for f in sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_bf16 amx_tile; do has $f && printf '%s ' $f; done)"
echo "load before: $(uptime)"
echo "pytorch: $("$py" -c 'import torch; print(torch.__version__)')"

# The fastest OpenBLAS kernel family for this CPU: single-thread sgemm per CPU-second (robust to other
# jobs taking the cores), median of 3 runs each.
candidates=("")
if has avx512f; then candidates+=(SkylakeX); has avx512_bf16 && candidates+=(Cooperlake); fi
if has avx2; then candidates+=(Haswell Zen); fi
best_core="" best_rate=0
for core in "${candidates[@]}"; do
  rates=()
  for _ in 1 2 3; do
    rates+=("$(OPENBLAS_CORETYPE=$core OPENBLAS_NUM_THREADS=1 "$bench" --model gpt-small $(shape gpt-small) --threads 1 --sgemm |
      "$py" -c 'import json,sys; print(json.load(sys.stdin)["cpu_gflops"])')")
  done
  rate=$(printf '%s\n' "${rates[@]}" | sort -g | sed -n 2p)
  echo "openblas sgemm, core ${core:-(its own choice)}: $rate GFLOP per CPU-second (1 thread, median of 3)"
  if "$py" -c "import sys; sys.exit(0 if $rate > $best_rate else 1)"; then best_core=$core best_rate=$rate; fi
done
if [ -n "$best_core" ]; then export OPENBLAS_CORETYPE=$best_core; else unset OPENBLAS_CORETYPE; fi
echo "using OPENBLAS_CORETYPE=${best_core:-(unset)}"

# PyTorch's vector kernels: its default against AVX-512 where the CPU has it (tiny step, cpu time).
aten_cap=""
if has avx512f; then
  tiny_cpu() {
    ATEN_CPU_CAPABILITY=$1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" bench/torch_gpt.py --model gpt-tiny $(shape gpt-tiny) \
      --threads 1 --steps 5 --warmup 1 | "$py" -c 'import json,sys; print(json.load(sys.stdin)["cpu_s"])'
  }
  d1=$(tiny_cpu default) a1=$(tiny_cpu avx512) d2=$(tiny_cpu default) a2=$(tiny_cpu avx512)
  echo "pytorch tiny step cpu seconds: default $d1 $d2, avx512 $a1 $a2"
  if "$py" -c "import sys; sys.exit(0 if $a1 + $a2 < $d1 + $d2 else 1)"; then aten_cap=avx512; fi
fi
if [ -n "$aten_cap" ]; then export ATEN_CPU_CAPABILITY=$aten_cap; else unset ATEN_CPU_CAPABILITY; fi
echo "using ATEN_CPU_CAPABILITY=${aten_cap:-(default)}"

for config in $configs; do
  model=$(model_arg "$config")
  for threads in 1 2; do
    steps=10 warmup=2
    [ "$config" = gpt-small ] && steps=5
    [ "$config" = llama-bench ] && steps=3 warmup=1  # 350 GFLOP a step, 2.4x gpt-small's
    [ "$config" = gpt2 ] && steps=2 warmup=1
    for ((r = 0; r < repeats; r++)); do
      export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
      "$bench" --model "$model" $(shape "$config") --threads "$threads" --memcpy >>"$results"
      "$bench" --model "$model" $(shape "$config") --threads "$threads" --sgemm >>"$results"
      "$bench" --model "$model" $(shape "$config") --threads "$threads" --steps $steps --warmup $warmup >>"$results"
      "$py" bench/torch_gpt.py --model "$model" $(shape "$config") --threads "$threads" --steps $steps --warmup $warmup >>"$results"
    done
  done
done
echo "load after: $(uptime)"
"$py" - "$results" "$configs" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
configs = sys.argv[2].split()
for r in rows:  # bench/configs/NAME.json -> NAME
    r["config"] = os.path.splitext(os.path.basename(r["config"]))[0]
def med(impl, cfg, th, key):
    v = [r[key] for r in rows if r["impl"] == impl and r["config"] == cfg and r["threads"] == th]
    return statistics.median(v) if v else float("nan")
tz_rows = [r for r in rows if r["impl"] == "tierzero"]
if tz_rows:
    print(f"tierzero gemm kernels: {tz_rows[0]['gemm_isa']}; CPU: {tz_rows[0]['cpu']}")
print("FLOPs per step = B*T*(6*L*W + 12*L*T*C + 6*V*C), W = one block's linear weights (GPT-2: 12*C^2;")
print("Llama: C*(H+2*KV)*D + C^2 + 3*C*F); medians of interleaved repeats;")
print("sgemm = OpenBLAS on the MLP's first product (B*T x 4C x C; SwiGLU: B*T x 2F x C), memcpy = 64 MiB,")
print("GB/s counting read + write")
print(f"{'model':<12}{'thr':>4}{'tz tok/s':>10}{'torch tok/s':>12}{'tz/torch':>9}{'tz GFLOP/s':>11}"
      f"{'torch GFLOP/s':>14}{'sgemm GFLOP/s':>14}{'tz/sgemm':>9}{'memcpy GB/s':>12}"
      f"{'| cpu-s: tz/torch':>17}{'tz/sgemm':>9}")
def cpu_rate(impl, cfg, th):  # GFLOP per CPU-second, times threads: the rate with the cores to itself
    v = [r["gflops"] * r["step_s"] * th / r["cpu_s"] for r in rows
         if r["impl"] == impl and r["config"] == cfg and r["threads"] == th]
    return statistics.median(v) if v else float("nan")
for cfg in configs:
    for th in (1, 2):
        tz, pt = med("tierzero", cfg, th, "tokens_per_s"), med("pytorch", cfg, th, "tokens_per_s")
        tzg, ptg, pk = med("tierzero", cfg, th, "gflops"), med("pytorch", cfg, th, "gflops"), med("sgemm", cfg, th, "gflops")
        mc = med("memcpy", cfg, th, "GBps")
        cpu_ratio = med("pytorch", cfg, th, "cpu_s") / med("tierzero", cfg, th, "cpu_s")
        cpu_frac = cpu_rate("tierzero", cfg, th) / med("sgemm", cfg, th, "cpu_gflops")
        print(f"{cfg:<12}{th:>4}{tz:>10.0f}{pt:>12.0f}{tz/pt:>9.2f}{tzg:>11.1f}{ptg:>14.1f}{pk:>14.1f}{tzg/pk:>9.2f}{mc:>12.1f}"
              f"{cpu_ratio:>17.2f}{cpu_frac:>9.2f}")
print("cpu-s columns: the same runs counted in CPU seconds of each process (all its threads), which other")
print("jobs on the machine inflate far less than wall time: PyTorch's CPU seconds per step over tierzero's, and")
print("tierzero's GFLOP per CPU-second over sgemm's")
PY
# Per layer slot: tierzero's measured time per step beside its limit on this CPU (tz_model_bench --limits:
# OpenBLAS sgemm of the slot's products, attention's causal products at the MLP product's sgemm rate, the
# other passes' least bytes at memcpy's rate), the fraction of the limit reached, and the same by kind.
profiles=$(mktemp)
trap 'rm -f "$results" "$profiles"' EXIT
for config in $configs; do
  steps=5
  [ "$config" = llama-bench ] && steps=3
  [ "$config" = gpt2 ] && steps=2
  for threads in 1 2; do
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$bench" --model "$(model_arg "$config")" \
      $(shape "$config") --threads "$threads" --steps $steps --warmup 1 --limits >>"$profiles"
  done
done
"$py" - "$profiles" <<'PY'
import json, sys
product_slots = ("qkv", "attn_proj", "fc", "mlp_proj", "lm_head")
def kind(slot):  # norms, activations, rotary-free passes, residuals, embedding, loss: elementwise
    return "products" if slot in product_slots else slot if slot in ("attention", "optimizer") else "elementwise"
for line in open(sys.argv[1]):
    r = json.loads(line)
    lay, lim, step = r["layers"], r["limits"], r["mean_step_s"]
    name = r["config"].rsplit("/", 1)[-1].removesuffix(".json")
    print(f"limits {name}, {r['threads']} thread(s): step {step * 1e3:.1f} ms ({r['cpu_s'] * 1e3:.1f} CPU ms), "
          f"{r['gflops'] / r['sgemm_gflops']:.2f} of sgemm's {r['sgemm_gflops']:.1f} GFLOP/s; "
          f"memcpy {r['memcpy_GBps']:.1f} GB/s")
    print(f"  {'slot':<14}{'share':>7}{'ms/step':>9}{'limit ms':>10}{'of limit':>9}{'tz gemm ms':>11}")
    kinds = {}
    for slot, (limit_s, gemm_s) in lim.items():
        s = lay[slot] if isinstance(lay[slot], float) else sum(lay[slot])
        k = kinds.setdefault(kind(slot), [0.0, 0.0])
        k[0] += s * step
        k[1] += limit_s
        frac = f"{limit_s / (s * step):9.2f}" if s > 0 else f"{'-':>9}"
        print(f"  {slot:<14}{s * 100:6.1f}%{s * step * 1e3:9.2f}{limit_s * 1e3:10.2f}{frac}"
              + (f"{gemm_s * 1e3:11.2f}" if gemm_s > 0 else ""))
    for k, (t, limit_s) in kinds.items():
        print(f"  = {k:<12}{t / step * 100:6.1f}%{t * 1e3:9.2f}{limit_s * 1e3:10.2f}{limit_s / t:9.2f}")
    print(f"  other (outside every slot) {lay['other'] * 100:.1f}%")
PY
