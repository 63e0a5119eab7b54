// Training steps on the GPU against the same steps on the CPU, in one run (built with -DTZ_CUDA=ON):
// a model preset, a plan and a world of ranks as threads, through make_train_run and ShardedEngine as
// `tierzero train` runs them, with --device cuda and --device cpu. Prints the machine (CPU vector
// extensions, GPU), then per device the median step time, tokens per second and the losses, and the
// GPU/CPU speed ratio; the losses of the two must agree (fp32 rounding apart).
//
//   tz_cuda_train_bench [--model gpt-small] [--plan zero3] [--world 1] [--batch 4] [--seq 256]
//                       [--steps 4] [--cpu-threads N] [--fp32] [--skip-cpu]
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/cpu_features.hpp"
#include "data/data_loader.hpp"
#include "engine/sharded_engine.hpp"
#include "model/gpt_config.hpp"
#include "topology/topology.hpp"
#include "train/train_run.hpp"

namespace {

struct Args {
  std::string model = "gpt-small", plan = "zero3";
  int world = 1, batch = 4, seq = 256, steps = 4, cpu_threads = 0;
  bool bf16 = true, skip_cpu = false;
};

int int_arg(const char* name, const char* v, int lo, int hi) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi) {
    fmt::print(stderr, "{} '{}': expected an integer in [{}, {}]\n", name, v, lo, hi);
    std::exit(2);
  }
  return static_cast<int>(x);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", k);
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--model")
      a.model = value();
    else if (k == "--plan")
      a.plan = value();
    else if (k == "--world")
      a.world = int_arg("--world", value(), 1, 64);
    else if (k == "--batch")
      a.batch = int_arg("--batch", value(), 1, 4096);
    else if (k == "--seq")
      a.seq = int_arg("--seq", value(), 1, 65536);
    else if (k == "--steps")
      a.steps = int_arg("--steps", value(), 2, 10000);
    else if (k == "--cpu-threads")
      a.cpu_threads = int_arg("--cpu-threads", value(), 1, 1024);
    else if (k == "--fp32")
      a.bf16 = false;
    else if (k == "--skip-cpu")
      a.skip_cpu = true;
    else {
      fmt::print(stderr, "unknown option '{}'\n", k);
      std::exit(2);
    }
  }
  return a;
}

struct DeviceResult {
  std::vector<float> losses;
  std::vector<double> step_s;  // rank 0's wall time per step
};

DeviceResult run(const Args& a, const tz::GptConfig& model, tz::DeviceKind device, int threads) {
  tz::TrainConfig c;
  c.micro_batch = a.batch;
  c.seq_len = a.seq;
  c.train_steps = a.steps;
  c.plan = a.plan;
  c.bf16 = a.bf16;
  const tz::Topology topo = tz::Topology::load("flat").resolve(a.world);
  tz::TrainRun run = tz::make_train_run(c, model, topo, a.world);
  run.engine.device = device;
  run.engine.threads = threads;
  tz::CommOptions comm;
  comm.device = device;
  comm.timeout_s = 600;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(a.world) * a.batch * (a.seq + 1) * (a.steps + 1));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<std::int32_t>((i * 7919 + i / 13) % static_cast<std::size_t>(model.vocab_size));
  DeviceResult out;
  std::mutex mu;
  tz::run_thread_mesh(
      topo,
      [&](tz::Mesh& mesh) {
        tz::ShardedEngine engine(mesh, model, run.plan, run.engine);
        tz::DataLoader loader(tokens, a.batch, a.seq, mesh.world().rank(), mesh.world().size(), 1);
        DeviceResult r;
        for (int s = 0; s < a.steps; ++s) {
          const auto t0 = std::chrono::steady_clock::now();
          const tz::EngineStep step =
              engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
          r.step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          r.losses.push_back(step.loss);
        }
        if (mesh.world().rank() == 0) {
          std::lock_guard lock(mu);
          out = std::move(r);
        }
      },
      comm);
  return out;
}

double median_after_first(std::vector<double> v) {  // the first step warms up (allocations, cuBLAS)
  v.erase(v.begin());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const tz::GptConfig model = tz::GptConfig::load(a.model);
  const int cpu_threads = a.cpu_threads > 0
                              ? a.cpu_threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / a.world);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    fmt::print(stderr, "no CUDA device\n");
    return 1;
  }
  fmt::print("{}\ngpu: {} ({} SMs, {:.0f} GiB)\n", tz::cpu_description(), prop.name, prop.multiProcessorCount,
             prop.totalGlobalMem / 1073741824.0);
  fmt::print(
      "model {} ({} layers, width {}), plan {}, {} rank(s) as threads, batch {} x seq {} per rank, {}, "
      "{} steps (the first not timed), cpu threads per rank {}\n",
      a.model, model.n_layer, model.n_embd, a.plan, a.world, a.batch, a.seq, a.bf16 ? "bf16" : "fp32",
      a.steps, cpu_threads);
  const double tokens = static_cast<double>(a.world) * a.batch * a.seq;
  const DeviceResult gpu = run(a, model, tz::DeviceKind::cuda, 1);
  const double gpu_s = median_after_first(gpu.step_s);
  fmt::print("cuda: {:.1f} ms/step, {:.0f} tokens/s, losses {}\n", gpu_s * 1e3, tokens / gpu_s,
             fmt::join(gpu.losses, " "));
  if (a.skip_cpu) return 0;
  const DeviceResult cpu = run(a, model, tz::DeviceKind::cpu, cpu_threads);
  const double cpu_s = median_after_first(cpu.step_s);
  fmt::print("cpu:  {:.1f} ms/step, {:.0f} tokens/s, losses {}\n", cpu_s * 1e3, tokens / cpu_s,
             fmt::join(cpu.losses, " "));
  float worst = 0;
  for (std::size_t i = 0; i < gpu.losses.size(); ++i)
    worst = std::max(worst, std::abs(gpu.losses[i] - cpu.losses[i]) / std::abs(cpu.losses[i]));
  fmt::print("cuda / cpu speed: {:.2f}x; largest relative loss difference {:.2e}\n", cpu_s / gpu_s, worst);
  return 0;
}
