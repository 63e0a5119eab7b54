// `tierzero train`: trains the GPT under a partition plan on every rank of the world (one process is
// a world of one; under mpirun/srun every rank runs this). The DeepSpeed-style --config file sets the
// run (engine/train_config.hpp); options given on the command line override it. Rank 0 prints the
// plan, the memory per rank, the bytes per tier next to zero3's, and one line per step
// (engine/train_session.hpp).
#include <fmt/format.h>
#include <sched.h>

#include <cstdlib>
#include <thread>

#include "cli/command_registry.hpp"
#include "comm/mesh.hpp"
#include "comm/mpi/mpi_world.hpp"
#include "core/error.hpp"
#include "engine/train_session.hpp"
#include "model/gpt_init.hpp"
#include "model/parameter_file.hpp"

namespace tz::cli {
namespace {

struct TrainArgs {
  std::string config;  // DeepSpeed-style JSON; empty: defaults
  std::string model = "gpt-tiny";
  std::string topology = "flat";
  bool emulate = false;
  std::string data;
  std::string plan;
  int steps = 0, batch = 0, seq = 0, grad_accum = 0, warmup = -1, log_every = 0, threads = 0;
  double lr = 0, clip = -1;
  std::int64_t seed = -1;
  bool fp32 = false, recompute = false, print_plan = false, no_progress = false;
  std::string metrics, compare_plan = "zero3", init_out;
  double timeout_s = 300;
  int inject_nan_step = -1, inject_nan_rank = 0;  // fault injection, for tests
};

// Threads per rank: the cores shared by the ranks of this host.
// Threads per rank: the cores this process is bound to when a launcher bound it to fewer than all of
// them (Open MPI binds the ranks of a 1- or 2-rank job to one core each: two threads there would share
// one core), else the host's cores divided among the host's ranks.
int default_threads() {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) < cores)
    return std::max(1, CPU_COUNT(&allowed));
  int local = 1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(var)) local = std::max(1, std::atoi(v));
  return std::max(1, cores / local);
}

TrainConfig build_config(const TrainArgs& a) {
  TrainConfig c = a.config.empty() ? TrainConfig{} : TrainConfig::load(a.config);
  if (a.config.empty()) {  // defaults of a quick run on the tiny model
    c.micro_batch = 8;
    c.train_steps = 300;
    c.adamw.lr = 1e-3;
    c.schedule.warmup_steps = 20;
    c.steps_per_print = 10;
  }
  if (!a.plan.empty()) c.plan = a.plan;
  if (a.steps > 0) c.train_steps = a.steps;
  if (a.batch > 0) c.micro_batch = a.batch;
  if (a.seq > 0) c.seq_len = a.seq;
  if (a.grad_accum > 0) c.grad_accum = a.grad_accum;
  if (a.warmup >= 0) c.schedule.warmup_steps = a.warmup;
  if (a.log_every > 0) c.steps_per_print = a.log_every;
  if (a.lr > 0) c.adamw.lr = a.lr;
  if (a.clip >= 0) c.grad_clip = a.clip;
  if (a.seed >= 0) c.seed = static_cast<std::uint64_t>(a.seed);
  if (a.fp32) c.bf16 = false;
  if (a.recompute) c.activation_recompute = true;
  return c;
}

int run_train(const TrainArgs& a) {
  MpiSession session;
  int world_size = 1;
  try {
    const GptConfig model = GptConfig::load(a.model);
    if (!a.init_out
             .empty()) {  // the initial weights the PyTorch reference loads (scripts/torch_reference.py)
      const ParameterLayout layout(model);
      std::vector<float> params(layout.total_numel());
      const std::uint64_t seed = a.seed >= 0 ? static_cast<std::uint64_t>(a.seed) : build_config(a).seed;
      gpt2_init(params.data(), layout, seed);
      write_parameter_file(a.init_out, layout, params.data());
      fmt::print("wrote initial parameters ({} floats, seed {}) to {} and {}.json\n", layout.total_numel(),
                 seed, a.init_out, a.init_out);
      if (a.steps == 0) return 0;
    }
    TrainSessionArgs args;
    args.config = build_config(a);
    args.model = model;
    args.data = a.data;
    args.threads = a.threads > 0 ? a.threads : default_threads();
    args.metrics_path = a.metrics;
    args.compare_plan = a.compare_plan;
    args.print_plan_only = a.print_plan;
    args.progress = !a.no_progress;
    args.inject_nan_step = a.inject_nan_step;
    args.inject_nan_rank = a.inject_nan_rank;

    CommOptions options;
    options.timeout_s = a.timeout_s;
    std::unique_ptr<Communicator> world = make_mpi_world(options);
    world_size = world->size();
    Topology topo = Topology::load(a.topology).resolve(world_size);
    check_hosts(topo, *world, a.emulate);
    Mesh mesh(topo, std::move(world));
    run_train_session(mesh, args);
    return 0;
  } catch (const InputError& e) {
    if (world_size > 1) return abort_world(fmt::format("error: {}", e.what()), 2);
    fmt::print(stderr, "tierzero: error: {}\n", e.what());
    return 2;
  } catch (const CommError& e) {
    return abort_world(fmt::format("communication error: {}", e.what()), 3);
  } catch (const std::exception& e) {
    if (world_size > 1) return abort_world(e.what(), 1);
    fmt::print(stderr, "tierzero: {}\n", e.what());
    return 1;
  }
}

const bool registered = register_command(
    {"train",
     "Train a GPT under a partition plan: one process, or every rank under mpirun (default: tiny model, "
     "fortunes corpus)",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<TrainArgs>();
       sub.add_option("--config", a->config,
                      "DeepSpeed-style training JSON (train_micro_batch_size_per_gpu, zero_optimization, "
                      "optimizer, scheduler, bf16, tierzero {plan, W_fwd, W_bwd, G, O, ...})");
       sub.add_option("--model", a->model,
                      "model preset (gpt-tiny, gpt-small, ...) or GPT-2 style config.json")
           ->capture_default_str();
       sub.add_option("--topology", a->topology,
                      "topology preset (frontier-mini, frontier, dgx-h100, flat) or JSON")
           ->capture_default_str();
       sub.add_flag("--emulate", a->emulate, "allow a multi-node topology on one machine");
       sub.add_option("--plan", a->plan,
                      "partition plan preset: ddp, zero1, zero2, zero3, zeropp, mics, hsdp, three-level");
       sub.add_option("--data", a->data,
                      "text file (bytes) or .bin token shard (llm.c or nanoGPT); default: fortunes");
       sub.add_option("--steps", a->steps,
                      "optimizer steps (default 300, or the config's tierzero.train_steps)");
       sub.add_option("--batch", a->batch, "sequences per micro-batch per rank (default 8)");
       sub.add_option("--seq", a->seq, "sequence length (default: n_positions)");
       sub.add_option("--grad-accum", a->grad_accum, "micro-batches per step");
       sub.add_option("--lr", a->lr, "peak learning rate (default 1e-3)");
       sub.add_option("--warmup", a->warmup, "linear warmup steps (default 20)");
       sub.add_option("--clip", a->clip, "max global gradient norm, 0 = off (default 1)");
       sub.add_option("--seed", a->seed, "initialisation and data-order seed");
       sub.add_flag("--fp32", a->fp32, "weights travel and compute in fp32 (exactness runs); default bf16");
       sub.add_flag("--recompute", a->recompute, "recompute each block's activations in backward");
       sub.add_option("--threads", a->threads,
                      "kernel + OpenBLAS threads per rank (default: cores / local ranks)");
       sub.add_option("--log-every", a->log_every, "print every N steps (default 10)");
       sub.add_option("--metrics", a->metrics, "write one JSON line per step to this file");
       sub.add_flag("--print-plan", a->print_plan,
                    "print the plan, memory per rank and bytes per tier, then stop");
       sub.add_option("--compare-plan", a->compare_plan, "plan whose bytes per tier are shown beside")
           ->capture_default_str();
       sub.add_flag("--no-progress", a->no_progress, "no progress bar on a terminal");
       sub.add_option("--timeout", a->timeout_s, "seconds before a stuck collective aborts the job")
           ->capture_default_str();
       sub.add_option(
           "--init-out", a->init_out,
           "write the initial parameters (raw f32 + .json size table) here; with --steps 0, only that");
       sub.add_option("--inject-nan-step", a->inject_nan_step,
                      "fault injection: write a NaN into one rank's gradient at this step (0-based)")
           ->group("Testing");
       sub.add_option("--inject-nan-rank", a->inject_nan_rank, "fault injection: the rank that gets the NaN")
           ->group("Testing");
       return [a] { return run_train(*a); };
     }});

}  // namespace
}  // namespace tz::cli
