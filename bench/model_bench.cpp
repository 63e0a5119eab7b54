// Training-step benchmark of tierzero's GPT on CPU (issue 4, item 7): forward, backward, clipping and
// AdamW at a named config and thread count; prints one JSON line with the median step time, tokens/s
// and GFLOP/s (model/flops.hpp: B T (72 L C^2 + 12 L T C + 6 V C) per step). With --sgemm it measures
// instead OpenBLAS sgemm on the model's largest linear-layer shape (B T x 4C x C, the MLP), the peak
// the step is compared with. bench/run_model_bench.sh runs it beside bench/torch_gpt.py.
//   tz_model_bench --config tiny|small [--threads N] [--steps S] [--warmup W] [--recompute] [--sgemm]
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/flops.hpp"
#include "model/thread_pool.hpp"
#include "model/trainer_single.hpp"

namespace {

struct BenchConfig {
  const char* name;
  tz::GptConfig model;
  int B, T;
};

const BenchConfig kConfigs[] = {
    {"tiny", {.n_layer = 4, .n_embd = 128, .n_head = 4, .n_positions = 128, .vocab_size = 256}, 8, 128},
    {"small", {.n_layer = 6, .n_embd = 384, .n_head = 6, .n_positions = 256, .vocab_size = 256}, 8, 256},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "tiny";
  int threads = 1, steps = 10, warmup = 2;
  bool recompute = false, sgemm = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--config")
      config = next();
    else if (a == "--threads")
      threads = std::stoi(next());
    else if (a == "--steps")
      steps = std::stoi(next());
    else if (a == "--warmup")
      warmup = std::stoi(next());
    else if (a == "--recompute")
      recompute = true;
    else if (a == "--sgemm")
      sgemm = true;
    else {
      fmt::print(stderr,
                 "usage: tz_model_bench --config tiny|small [--threads N] [--steps S] [--warmup W] "
                 "[--recompute] [--sgemm]\n");
      return 2;
    }
  }
  const BenchConfig* bc = nullptr;
  for (const auto& c : kConfigs)
    if (config == c.name) bc = &c;
  if (!bc) {
    fmt::print(stderr, "tz_model_bench: unknown config '{}' (tiny, small)\n", config);
    return 2;
  }
  tz::set_kernel_threads(threads);
  if (sgemm) {
    const int M = bc->B * bc->T, N = 4 * bc->model.n_embd, K = bc->model.n_embd;
    std::vector<float> a(static_cast<std::size_t>(M) * K, 0.5f), b(static_cast<std::size_t>(N) * K, 0.25f),
        c(static_cast<std::size_t>(M) * N);
    std::vector<double> gf;
    for (int r = 0; r < warmup + steps * 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f,
                  c.data(), N);
      if (r >= warmup) gf.push_back(2.0 * M * N * K / seconds_since(t0) / 1e9);
    }
    fmt::print(
        "{{\"impl\": \"sgemm\", \"config\": \"{}\", \"threads\": {}, \"shape\": [{}, {}, {}], \"gflops\": "
        "{:.2f}}}\n",
        config, threads, M, N, K, median(gf));
    return 0;
  }
  tz::TrainOptions opt;
  opt.batch = bc->B;
  opt.seq = bc->T;
  opt.threads = threads;
  opt.recompute = recompute;
  opt.schedule = {.max_lr = 1e-4f, .min_lr = 1e-4f, .warmup_steps = 0, .decay_steps = 1};
  tz::SingleTrainer trainer(bc->model, opt);
  std::mt19937 gen(1);
  auto batch = [&](std::int32_t* in, std::int32_t* tg) {
    for (int i = 0; i < bc->B * bc->T; ++i) {
      in[i] = static_cast<std::int32_t>(gen() % bc->model.vocab_size);
      tg[i] = static_cast<std::int32_t>(gen() % bc->model.vocab_size);
    }
  };
  std::vector<double> times;
  for (int s = 0; s < warmup + steps; ++s) {
    tz::StepRecord r = trainer.step(batch);
    if (s >= warmup) times.push_back(r.seconds);
  }
  const double t = median(times);
  const double flops = tz::training_step_flops(bc->model, bc->B, bc->T);
  fmt::print(
      "{{\"impl\": \"tierzero\", \"config\": \"{}\", \"threads\": {}, \"step_s\": {:.4f}, \"tokens_per_s\": "
      "{:.1f}, "
      "\"gflops\": {:.2f}}}\n",
      config, threads, t, bc->B * bc->T / t, flops / t / 1e9);
  return 0;
}
