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
//   --fused    (with a step or --profile) GELU and the residual adds in the products' epilogues instead
//              of separate passes (GptOptions::fuse_epilogues): the A/B of that fusion in one binary
// bench/run_model_bench.sh runs it beside bench/torch_gpt.py (which reads the same model files).
//   tz_model_bench --model PRESET|FILE --batch B --seq T [--threads N] [--steps S] [--warmup W]
//                  [--recompute] [--fused] [--isa portable|avx2|avx512] [--sgemm | --gemm | --memcpy |
//                  --profile]
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
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
#include "model/model_preset.hpp"
#include "train/trainer_single.hpp"

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
    else if (a == "--sgemm" || a == "--gemm" || a == "--memcpy" || a == "--profile")
      mode = a.substr(2);
    else {
      fmt::print(stderr,
                 "usage: tz_model_bench --model PRESET|FILE --batch B --seq T [--threads N] [--steps S] "
                 "[--warmup W] [--recompute] [--fused] [--isa portable|avx2|avx512] [--sgemm | --gemm | "
                 "--memcpy | "
                 "--profile]\n");
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
  const std::string head = common_fields(mode == "step" || mode == "profile" ? "tierzero" : mode.c_str(),
                                         model_name.c_str(), threads);

  if (mode == "sgemm" || mode == "gemm") {
    const int M = B * T, K = model.n_embd;
    const int N = static_cast<int>(model.mlp_width()) * (model.mlp == tz::MlpKind::swiglu ? 2 : 1);
    std::vector<float> a(static_cast<std::size_t>(M) * K, 0.5f), b(static_cast<std::size_t>(N) * K, 0.25f),
        c(static_cast<std::size_t>(M) * N);
    const Timing s = median_seconds(warmup, steps * 3, [&] {
      if (mode == "sgemm")
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f,
                    c.data(), N);
      else
        tz::gemm({.trans_b = true,
                  .M = M,
                  .N = N,
                  .K = K,
                  .A = a.data(),
                  .lda = K,
                  .B = b.data(),
                  .ldb = K,
                  .C = c.data(),
                  .ldc = N});
    });
    // cpu_gflops: per CPU-second of the process, what a run with its cores to itself would reach.
    fmt::print("{{{}, \"shape\": [{}, {}, {}], \"gflops\": {:.2f}, \"cpu_gflops\": {:.2f}}}\n", head, M, N, K,
               2.0 * M * N * K / s.wall_s / 1e9, 2.0 * M * N * K * threads / s.cpu_s / 1e9);
    return 0;
  }
  if (mode == "memcpy") {
    const std::size_t n = std::size_t{64} << 20;
    std::vector<char> src(n, 1), dst(n, 0);
    const Timing s = median_seconds(warmup, steps * 3, [&] {
      tz::parallel_for(n, std::size_t{1} << 20, [&](std::size_t b, std::size_t e) {
        std::memcpy(dst.data() + b, src.data() + b, e - b);
      });
    });
    fmt::print("{{{}, \"bytes\": {}, \"GBps\": {:.2f}}}\n", head, n, 2.0 * n / s.wall_s / 1e9);
    return 0;
  }

  tz::TrainOptions opt;
  opt.batch = B;
  opt.seq = T;
  opt.threads = threads;
  opt.recompute = recompute;
  opt.profile = mode == "profile";
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
    layers += fmt::format("\"optimizer\": {:.4f}, \"other\": {:.4f}}}", opt_total / step_total,
                          1.0 - (p.total_s() + opt_total) / step_total);
  }
  fmt::print(
      "{{{}, \"family\": \"{}\", \"step_s\": {:.4f}, \"cpu_s\": {:.4f}, \"tokens_per_s\": {:.1f}, "
      "\"gflops\": {:.2f}{}}}\n",
      head, tz::model_family_name(model.family), t, median(cpu), B * T / t, flops / t / 1e9, layers);
  return 0;
}
