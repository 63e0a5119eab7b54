// Training-step benchmark of tierzero's model on CPU (any family: GPT-2, Llama, GPT-NeoX): forward,
// backward, clipping and AdamW for a model (a preset of models/ or a config file such as
// bench/configs/llama-bench.json, model/model_preset.hpp) at a batch, sequence length and thread count;
// prints one JSON line with the median step time, tokens/s and GFLOP/s (model/flops.hpp per family:
// B T (6 L W + 12 L T C + 6 V C) per step, W one block's linear weights; GPT-2: W = 12 C^2), the CPU's
// vector extensions and the gemm kernels in use.
// Other modes measure the references the step is compared with, on this CPU:
//   --sgemm    OpenBLAS sgemm on the MLP's first product (B T x 4C x C; SwiGLU's gate and up: B T x 2F x C),
//              the peak the step is held to
//   --gemm     tierzero's own gemm (model/gemm.hpp) on the same shape
//   --memcpy   memcpy of 64 MiB (GB/s counting bytes read + written), split over the threads
//   --profile  the step, plus each layer's share (forward and backward) and the optimizer's
//   --limits   --profile, plus each layer slot's limit on this CPU per step (bench/layer_limits.hpp):
//              OpenBLAS sgemm of its products, attention's causal products at the MLP product's sgemm
//              rate, the other passes' least bytes at memcpy's rate; and tierzero's gemm on the products'
//              own arguments. "limits": {slot: [limit s, gemm s] per step}, beside the shares of "layers"
//              and "mean_step_s" (the profiled steps' mean, which the shares are of)
//   --fused    (with a step or --profile) GELU and the residual adds in the products' epilogues instead
//              of separate passes (GptOptions::fuse_epilogues): the A/B of that fusion in one binary
// bench/run_model_bench.sh runs it beside bench/torch_gpt.py (which reads the same model files).
//   tz_model_bench --model PRESET|FILE --batch B --seq T [--threads N] [--steps S] [--warmup W]
//                  [--recompute] [--fused] [--isa portable|avx2|avx512] [--sgemm | --gemm | --memcpy |
//                  --profile | --limits]
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "core/timing.hpp"
#include "device/cpu/gemm.hpp"
#include "model/flops.hpp"
#include "model/kernel_threads.hpp"
#include "model/layer_work.hpp"
#include "model/model_preset.hpp"
#include "train/trainer_single.hpp"

#include "layer_limits.hpp"

extern "C" char* openblas_get_corename(void);

namespace {

using tz::median;
using tz::seconds_since;

// CPU seconds of the whole process (all threads): on a loaded machine, what the work itself cost.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Fields every line carries: what ran, on which CPU, with which kernels.
std::string common_fields(const char* impl, const char* config, int threads) {
  return fmt::format(
      "\"impl\": \"{}\", \"config\": \"{}\", \"threads\": {}, \"cpu\": \"{}\", \"gemm_isa\": \"{}\", "
      "\"openblas_core\": \"{}\"",
      impl, config, threads, tz::cpu_description(), tz::gemm_isa_name(tz::active_gemm_isa()),
      openblas_get_corename());
}

struct Timing {
  double wall_s, cpu_s;  // medians per run: wall time, and CPU time of the process (all threads)
};

template <class F>
Timing median_seconds(int warmup, int runs, F&& f) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < warmup + runs; ++r) {
    const double c0 = process_cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    f();
    if (r >= warmup) {
      wall.push_back(seconds_since(t0));
      cpu.push_back(process_cpu_seconds() - c0);
    }
  }
  return {median(wall), median(cpu)};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "gpt-tiny", mode = "step", isa;
  int threads = 1, steps = 10, warmup = 2, B = 8, T = 128;
  bool recompute = false, fused = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    // A whole decimal integer, else -1 (rejected by the range checks below, naming the option).
    auto next_int = [&] {
      const std::string v = next();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      return !v.empty() && *end == '\0' && n >= 0 && n <= 1 << 30 ? static_cast<int>(n) : -1;
    };
    if (a == "--model")
      model_name = next();
    else if (a == "--batch")
      B = next_int();
    else if (a == "--seq")
      T = next_int();
    else if (a == "--threads")
      threads = next_int();
    else if (a == "--steps")
      steps = next_int();
    else if (a == "--warmup")
      warmup = next_int();
    else if (a == "--recompute")
      recompute = true;
    else if (a == "--fused")
      fused = true;
    else if (a == "--isa")
      isa = next();
    else if (a == "--sgemm" || a == "--gemm" || a == "--memcpy" || a == "--profile" || a == "--limits")
      mode = a.substr(2);
    else {
      fmt::print(stderr,
                 "usage: tz_model_bench --model PRESET|FILE --batch B --seq T [--threads N] [--steps S] "
                 "[--warmup W] [--recompute] [--fused] [--isa portable|avx2|avx512] [--sgemm | --gemm | "
                 "--memcpy | --profile | --limits]\n");
      return 2;
    }
  }
  tz::ModelPreset preset;
  try {
    preset = tz::load_model(model_name);
  } catch (const tz::InputError& e) {
    fmt::print(stderr, "tz_model_bench: --model: {}\n", e.what());
    return 2;
  }
  const tz::GptConfig& model = preset.config;
  if (B < 1 || T < 1 || T > model.n_positions || threads < 1 || steps < 1 || warmup < 0) {
    fmt::print(stderr,
               "tz_model_bench: bad --batch {} (>= 1), --seq {} (1..{}, the model's n_positions), "
               "--threads {} (>= 1), --steps {} (>= 1) or --warmup {} (>= 0)\n",
               B, T, model.n_positions, threads, steps, warmup);
    return 2;
  }
  if (!isa.empty()) {
    bool found = false;
    for (tz::GemmIsa g : {tz::GemmIsa::portable, tz::GemmIsa::avx2, tz::GemmIsa::avx512})
      if (isa == tz::gemm_isa_name(g)) {
        if (!tz::gemm_isa_supported(g)) {
          fmt::print(stderr, "tz_model_bench: this CPU cannot run --isa {}\n", isa);
          return 2;
        }
        tz::set_gemm_isa(g);
        found = true;
      }
    if (!found) {
      fmt::print(stderr, "tz_model_bench: unknown --isa '{}' (portable, avx2, avx512)\n", isa);
      return 2;
    }
  }
  tz::set_kernel_threads(threads);
  if (mode == "limits" && fused) {
    fmt::print(stderr, "tz_model_bench: --limits describes the unfused step; drop --fused\n");
    return 2;
  }
  const bool step_mode = mode == "step" || mode == "profile" || mode == "limits";
  const std::string head = common_fields(step_mode ? "tierzero" : mode.c_str(), model_name.c_str(), threads);

  // The MLP's first product (B T x 4C x C; SwiGLU's gate and up: B T x 2F x C), OpenBLAS or tierzero's.
  const int pM = B * T, pK = model.n_embd;
  const int pN = static_cast<int>(model.mlp_width()) * (model.mlp == tz::MlpKind::swiglu ? 2 : 1);
  auto time_mlp_product = [&](bool openblas) {
    std::vector<float> a(static_cast<std::size_t>(pM) * pK, 0.5f),
        b(static_cast<std::size_t>(pN) * pK, 0.25f), c(static_cast<std::size_t>(pM) * pN);
    return median_seconds(warmup, steps * 3, [&] {
      if (openblas)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, pM, pN, pK, 1.0f, a.data(), pK, b.data(), pK,
                    0.0f, c.data(), pN);
      else
        tz::gemm({.trans_b = true,
                  .M = pM,
                  .N = pN,
                  .K = pK,
                  .A = a.data(),
                  .lda = pK,
                  .B = b.data(),
                  .ldb = pK,
                  .C = c.data(),
                  .ldc = pN});
    });
  };
  // memcpy of 64 MiB split over the threads: GB/s counting the bytes read and written.
  auto memcpy_gbps = [&] {
    const std::size_t n = std::size_t{64} << 20;
    std::vector<char> src(n, 1), dst(n, 0);
    const Timing s = median_seconds(warmup, steps * 3, [&] {
      tz::parallel_for(n, std::size_t{1} << 20, [&](std::size_t b, std::size_t e) {
        std::memcpy(dst.data() + b, src.data() + b, e - b);
      });
    });
    return 2.0 * n / s.wall_s / 1e9;
  };
  const double product_flops = 2.0 * pM * pN * pK;
  if (mode == "sgemm" || mode == "gemm") {
    const Timing s = time_mlp_product(mode == "sgemm");
    // cpu_gflops: per CPU-second of the process, what a run with its cores to itself would reach.
    fmt::print("{{{}, \"shape\": [{}, {}, {}], \"gflops\": {:.2f}, \"cpu_gflops\": {:.2f}}}\n", head, pM, pN,
               pK, product_flops / s.wall_s / 1e9, product_flops * threads / s.cpu_s / 1e9);
    return 0;
  }
  if (mode == "memcpy") {
    fmt::print("{{{}, \"bytes\": {}, \"GBps\": {:.2f}}}\n", head, std::size_t{64} << 20, memcpy_gbps());
    return 0;
  }
  // --limits, first part: tierzero's own timings (its gemm on each linear layer's products, memcpy), before
  // any OpenBLAS call (bench/layer_limits.hpp says why); the sgemm timings follow the step.
  auto wall = [&](int w, int r, auto&& f) { return median_seconds(w, r, f).wall_s; };
  const tz::LayerWork work = tz::layer_work(model, B, T);
  std::array<double, tz::kLayerSlots> gemm_s{};
  double gbps = 0;
  if (mode == "limits") {
    for (const tz::LinearLayerWork& l : work.linears)
      gemm_s[static_cast<int>(l.slot)] += tz::bench::time_linear_layer(l, work.N, false, 3, wall);
    gbps = memcpy_gbps();
  }

  tz::TrainOptions opt;
  opt.batch = B;
  opt.seq = T;
  opt.threads = threads;
  opt.recompute = recompute;
  opt.profile = mode == "profile" || mode == "limits";
  opt.fuse_epilogues = fused;
  opt.schedule = {.max_lr = 1e-4f, .min_lr = 1e-4f, .warmup_steps = 0, .decay_steps = 1};
  tz::SingleTrainer trainer(model, opt);
  std::mt19937 gen(1);
  auto batch = [&](std::int32_t* in, std::int32_t* tg) {
    for (int i = 0; i < B * T; ++i) {
      in[i] = static_cast<std::int32_t>(gen() % model.vocab_size);
      tg[i] = static_cast<std::int32_t>(gen() % model.vocab_size);
    }
  };
  std::vector<double> times, optimizer, cpu;
  double step_total = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) trainer.model().reset_profile();
    const double c0 = process_cpu_seconds();
    tz::StepRecord r = trainer.step(batch);
    if (s >= warmup) {
      cpu.push_back(process_cpu_seconds() - c0);
      times.push_back(r.seconds);
      optimizer.push_back(r.optimizer_seconds);
      step_total += r.seconds;
    }
  }
  const double t = median(times);
  const double flops = tz::training_step_flops(model, B, T);
  std::string layers;
  if (opt.profile) {
    // Shares of the measured steps' total time: forward and backward per layer, then the optimizer.
    const tz::LayerProfile& p = trainer.model().profile();
    double opt_total = 0;
    for (double o : optimizer) opt_total += o;
    layers = ", \"layers\": {";
    for (int i = 0; i < tz::kLayerSlots; ++i)
      layers += fmt::format("\"{}\": [{:.4f}, {:.4f}], ", tz::layer_slot_name(static_cast<tz::LayerSlot>(i)),
                            p.forward_s[i] / step_total, p.backward_s[i] / step_total);
    layers +=
        fmt::format("\"optimizer\": {:.4f}, \"other\": {:.4f}}}, \"mean_step_s\": {:.6f}",
                    opt_total / step_total, 1.0 - (p.total_s() + opt_total) / step_total, step_total / steps);
  }
  std::string limits;
  if (mode == "limits") {
    const double sgemm_gflops = product_flops / time_mlp_product(true).wall_s / 1e9;
    std::array<double, tz::kLayerSlots> limit_s{};
    for (int i = 0; i < tz::kLayerSlots; ++i) limit_s[i] = work.bytes[i] / (gbps * 1e9);
    for (const tz::LinearLayerWork& l : work.linears)
      limit_s[static_cast<int>(l.slot)] += tz::bench::time_linear_layer(l, work.N, true, 3, wall);
    limit_s[static_cast<int>(tz::LayerSlot::attention)] += work.attention_flops_causal / (sgemm_gflops * 1e9);
    limits = fmt::format(", \"sgemm_gflops\": {:.2f}, \"memcpy_GBps\": {:.2f}, \"limits\": {{", sgemm_gflops,
                         gbps);
    for (int i = 0; i < tz::kLayerSlots; ++i)
      limits += fmt::format("\"{}\": [{:.6f}, {:.6f}], ", tz::layer_slot_name(static_cast<tz::LayerSlot>(i)),
                            limit_s[i], gemm_s[i]);
    limits += fmt::format("\"optimizer\": [{:.6f}, 0]}}", work.optimizer_bytes / (gbps * 1e9));
  }
  fmt::print(
      "{{{}, \"family\": \"{}\", \"step_s\": {:.4f}, \"cpu_s\": {:.4f}, \"tokens_per_s\": {:.1f}, "
      "\"gflops\": {:.2f}{}{}}}\n",
      head, tz::model_family_name(model.family), t, median(cpu), B * T / t, flops / t / 1e9, layers, limits);
  return 0;
}
