// `tierzero train`: trains the GPT under a partition plan on every rank of the world (one process is
// a world of one; under mpirun/srun every rank runs this). The DeepSpeed-style --config file sets the
// run (train/train_config.hpp); options given on the command line override it, and what neither sets
// takes TrainConfig's defaults, which are also what --help shows. The flow, on every rank: the
// model and config (read on every rank, so a file one rank cannot read is reported as such), the
// plan (`--plan auto`: the cost model's choice, cli/auto_plan.hpp), the run (train/train_run.hpp),
// the memory it needs against the machine's, this rank's data and validation streams, the
// agreement, the engine, where it starts (--resume a checkpoint, --init-from exported weights) and
// the loop (train/train_session.hpp), which evaluates and saves checkpoints (--save-dir); rank 0
// prints (cli/train_report.hpp). SIGINT or SIGTERM, on any rank, stops every rank at the next step
// boundary (train/stop_request.hpp; exit code 5), after saving a checkpoint of that step when
// saving is configured.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "checkpoint/save_dir_lock.hpp"
#include "checkpoint/weight_import.hpp"
#include "cli/auto_plan.hpp"
#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/compute_peak.hpp"
#include "cli/exit_codes.hpp"
#include "cli/run_world.hpp"
#include "cli/train_report.hpp"
#include "core/error.hpp"
#include "data/data_loader.hpp"
#include "data/shard_set.hpp"
#include "data/token_data.hpp"
#include "model/gpt_init.hpp"
#include "model/model_preset.hpp"
#include "model/parameter_file.hpp"
#include "plan/partition_plan.hpp"
#include "train/run_memory.hpp"
#include "train/stop_request.hpp"
#include "train/train_run.hpp"
#include "train/train_session.hpp"

namespace tz::cli {
namespace {

constexpr long long kMaxCount = 1LL << 30;

struct TrainArgs {
  std::string config;  // DeepSpeed-style JSON; empty: defaults
  std::string model = "gpt-tiny";
  std::string topology = "flat";
  bool emulate = false;
  std::string device = "cpu";
  std::string data, val_data;
  std::string plan;
  std::optional<int> steps, micro_batch, seq, grad_accum, warmup, log_every, threads, prefetch;
  std::optional<double> lr, clip;
  std::optional<std::uint64_t> seed;
  std::string collectives;
  int eval_every = 0, eval_batches = 20;
  bool fp32 = false, recompute = false, print_plan = false, no_progress = false;
  std::string metrics, compare_plan = "zero3", init_out, weights_out;
  std::string peak_tflops = "auto";
  double timeout_s = 300;
  std::string save_dir, resume, init_from;
  std::optional<int> save_every, keep;
  double checkpoint_timeout_s = 1800;
  bool check_collectives = false;
  std::optional<double> startup_timeout_s;
  std::string flight_recorder;                    // empty: the config's (default tierzero-flight)
  int inject_nan_step = -1, inject_nan_rank = 0;  // fault injection, for tests
  std::string inject_save_kill;
  int inject_save_kill_rank = 0, inject_save_kill_step = -1;
};

// Threads per rank: the cores this process is bound to when a launcher bound it to fewer than all of
// them (Open MPI binds the ranks of a 1- or 2-rank job to one core each: two threads there would share
// one core), else the host's cores divided among the host's ranks.
int default_threads() {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) < cores)
    return std::max(1, CPU_COUNT(&allowed));
  return std::max(1, cores / launch_local_size());
}

// The configuration the options ask for: the --config file (or TrainConfig's defaults), then every
// option given on the command line over it.
TrainConfig build_config(const TrainArgs& a) {
  TrainConfig c = a.config.empty() ? TrainConfig{} : TrainConfig::load(a.config);
  if (!a.plan.empty()) c.plan = a.plan;
  if (a.steps) c.train_steps = *a.steps;
  if (a.micro_batch) c.micro_batch = *a.micro_batch;
  if (a.seq) c.seq_len = *a.seq;
  if (a.grad_accum) c.grad_accum = *a.grad_accum;
  if (a.warmup) c.schedule.warmup_steps = *a.warmup;
  if (a.log_every) c.steps_per_print = *a.log_every;
  if (a.lr) {
    // The peak of whichever schedule runs: WarmupLR and WarmupDecayLR take theirs from warmup_max_lr.
    c.adamw.lr = *a.lr;
    if (c.schedule.type == "WarmupLR" || c.schedule.type == "WarmupDecayLR") c.schedule.warmup_max_lr = *a.lr;
  }
  if (a.clip) c.grad_clip = *a.clip;
  if (a.seed) c.seed = *a.seed;
  if (a.fp32) c.bf16 = false;
  if (a.recompute) c.activation_recompute = true;
  if (!a.collectives.empty()) c.collectives = a.collectives;
  if (a.prefetch) {
    c.prefetch_depth = *a.prefetch;
    c.prefetch_elements.reset();
  }
  if (!a.save_dir.empty()) c.save_dir = a.save_dir;
  if (a.save_every) c.save_every = *a.save_every;
  if (a.keep) c.keep = *a.keep;
  if (a.check_collectives) c.check_collectives = true;
  if (a.startup_timeout_s) c.startup_timeout_s = *a.startup_timeout_s;
  if (!a.flight_recorder.empty()) c.flight_recorder = a.flight_recorder;
  if (c.save_dir.empty() && (c.save_every != 0 || c.keep != 0)) {
    const std::string given =
        a.save_every ? fmt::format("--save-every {}", *a.save_every)
        : a.keep     ? fmt::format("--keep {}", *a.keep)
                     : fmt::format("config {}: save_every {}, keep {}", a.config, c.save_every, c.keep);
    fail_input(
        "{}: checkpoints need a save directory (--save-dir DIR, or the config's save_dir); without one "
        "nothing is saved",
        given);
  }
  return c;
}

// --steps 0 runs nothing, so it is refused, except to turn a model file into a checkpoint: with
// --init-from FILE and --save-dir DIR the imported weights are saved as step 0.
void check_checkpoint_args(const TrainArgs& a) {
  if (a.steps && *a.steps == 0 && (a.init_from.empty() || a.save_dir.empty()))
    fail_input(
        "--steps 0: must be an integer in [1, {}] (0 only with --init-from FILE and --save-dir DIR, which "
        "save the imported weights as a checkpoint)",
        kMaxCount);
  if (!a.resume.empty() && !a.init_from.empty())
    fail_input("--resume {} and --init-from {}: give one (a resumed run already has its weights)", a.resume,
               a.init_from);
  if (!(a.checkpoint_timeout_s > a.timeout_s))
    fail_input(
        "--checkpoint-timeout {} must be longer than --timeout {} (checkpoint I/O outlasts a collective)",
        a.checkpoint_timeout_s, a.timeout_s);
  if (!a.inject_save_kill.empty()) check_kill_point(a.inject_save_kill, "--inject-save-kill");
  // Output files are checked before the run, not found unwritable after it.
  if (!a.weights_out.empty()) check_parameter_file_path(a.weights_out, "--weights-out");
  if (!a.init_out.empty()) check_parameter_file_path(a.init_out, "--init-out");
}

// What set the micro-batch, for the memory message.
std::string micro_batch_origin(const TrainArgs& a) {
  if (a.micro_batch) return "--micro-batch";
  if (!a.config.empty()) return "train_micro_batch_size_per_gpu of " + a.config + ", or its default";
  return "the default";
}

// Memory a rank may use: this host's physical memory over the ranks sharing it.
double available_bytes_per_rank(int ranks_on_host) {
  const double bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  return bytes / std::max(1, ranks_on_host);
}

// Collective: with "auto" every rank measures at once and all take the fastest rank's figure, so
// that a rank whose measurement was slowed (a peer's set-up on its core) does not report an MFU
// above what its core can do.
PeakRate peak_rate(Mesh& mesh, const TrainArgs& a, int threads, DeviceKind device, const Topology& topo) {
  if (a.peak_tflops != "auto")
    return {std::stod(a.peak_tflops) * 1e12,
            fmt::format("{} TFLOPS per rank, given by --peak-tflops", a.peak_tflops)};
  const double mine = measure_sgemm_gflops(device, threads);
  std::vector<double> all(mesh.world().size());
  mesh.world().all_gather(&mine, all.data(), 1, DType::f64).wait();
  const double gflops = *std::max_element(all.begin(), all.end());
  const double slowest = *std::min_element(all.begin(), all.end());
  return {gflops * 1e9,
          fmt::format("fp32 matrix product measured on the {} backend at start-up: {:.1f} GFLOP/s per rank "
                      "({} thread{}{}; the engine computes there, so topology {}'s device{} is not the peak)",
                      device_kind_name(device), gflops, threads, threads == 1 ? "" : "s",
                      all.size() > 1 ? fmt::format(", the fastest of {} ranks measuring at once, the slowest "
                                                   "{:.1f}",
                                                   all.size(), slowest)
                                     : "",
                      topo.name(),
                      topo.device().name.empty()
                          ? ""
                          : fmt::format(" ({}, {} TFLOPS)", topo.device().name, topo.device().peak_tflops))};
}

DataLoader make_loader(const ShardSet& data, const TrainRun& run, int rank, int world, std::uint64_t seed,
                       const GptConfig& model) {
  return DataLoader(data, {.batch = run.micro_batch,
                           .seq = run.engine.seq,
                           .rank = rank,
                           .world = world,
                           .seed = seed,
                           .vocab_size = model.vocab_size});
}

// --init-out: the initial weights the PyTorch reference loads (scripts/torch_reference.py).
void write_initial_parameters(const std::string& path, const GptConfig& model, std::uint64_t seed) {
  const ParameterLayout layout(model);
  std::vector<float> params(layout.total_numel());
  gpt2_init(params.data(), layout, seed);
  write_parameter_file(path, layout, params.data());
  fmt::print("wrote initial parameters ({} floats, seed {}) to {} and {}.json\n", layout.total_numel(), seed,
             path, path);
}

// The body of the run on one rank of `mesh`; `requested` is build_config(a), built once per process.
void train_on_rank(Mesh& mesh, const TrainArgs& a, const TrainConfig& requested, int ranks_per_process) {
  const Topology& topo = mesh.topology();
  const int world = mesh.world().size(), rank = mesh.world().rank();
  const bool lead = rank == 0;
  const ModelPreset preset = load_model(a.model);
  const GptConfig& model = preset.config;
  if (!a.init_out.empty()) {
    if (lead) write_initial_parameters(a.init_out, model, requested.seed);
    if (!a.steps) return;  // --init-out alone: only that
  }
  const TrainConfig config = resolve_auto_plan(requested, model, topo, lead);
  TrainRun run = make_train_run(config, model, topo, world);
  run.engine.threads = a.threads.value_or(default_threads());
  run.engine.device = parse_device_kind(a.device, "--device");
  run.engine.inject_nan_step = a.inject_nan_step;
  run.engine.inject_nan_rank = a.inject_nan_rank;
  // The comparison plan moves the same model with the same options, unquantized.
  PlanOptions compare_options = run.plan.options();
  compare_options.qwz = compare_options.qgz = false;
  const PartitionPlan compare = PartitionPlan::preset(a.compare_plan, topo).with_options(compare_options);
  if (a.print_plan) {
    if (lead) print_plan_only(stdout, model, topo, run, compare);
    return;
  }
  const int ranks_on_host = ranks_per_process > 1 ? ranks_per_process : launch_local_size();
  check_run_memory(run_memory_per_rank(model, topo, run), available_bytes_per_rank(ranks_on_host), run,
                   micro_batch_origin(a));

  const ShardSet data = a.data.empty() ? ShardSet::from_tokens(load_fortunes_corpus().tokens, kFortunesDir)
                                       : ShardSet::open(a.data);
  DataLoader loader = make_loader(data, run, rank, world, run.engine.seed, model);
  std::optional<ShardSet> val_data;
  std::optional<DataLoader> val_loader;
  Evaluation eval;
  if (!a.val_data.empty()) {
    val_data = ShardSet::open(a.val_data);
    // Its own fixed order (seed 0), the same every evaluation: rewound to its start each time.
    val_loader.emplace(make_loader(*val_data, run, rank, world, 0, model));
    const DataCursor start = val_loader->cursor();
    eval = {.every = a.eval_every,
            .batches = a.eval_batches,
            .next_batch = [&](std::int32_t* in, std::int32_t* tg) { val_loader->next(in, tg); },
            .rewind = [&, start] { val_loader->restore(start); }};
  }
  std::string identity = fmt::format("{}:{:016x}", data.spec(), data.fingerprint());
  if (val_data)
    identity += fmt::format("|val {}:{:016x}:{}:{}", val_data->spec(), val_data->fingerprint(), a.eval_every,
                            a.eval_batches);
  check_run_agreement(mesh, config, model, run, identity);
  // The save directory is made, checked and locked before any work it would hold.
  std::optional<SaveDirLock> save_dir_lock;
  if (!run.save.dir.empty()) save_dir_lock.emplace(mesh.world(), run.save.dir, a.checkpoint_timeout_s);
  ShardedEngine engine(mesh, model, run.plan, run.engine);
  const PeakRate peak = peak_rate(mesh, a, run.engine.threads, run.engine.device, topo);
  const double entropy = data.unigram_entropy_nats(model.vocab_size);
  const auto compare_bytes = step_bytes_per_tier(model, topo, compare);
  if (!a.resume.empty()) {
    const ResumedRun r = resume_run(mesh, engine, loader, a.resume, config, run, a.checkpoint_timeout_s);
    if (lead) {
      fmt::print("resumed from {} at step {} ({} read by rank 0 in {:.3f} s){}\n", r.checkpoint.path,
                 r.checkpoint.step, format_bytes(static_cast<double>(r.checkpoint.bytes_read)),
                 r.checkpoint.seconds, r.checkpoint.note.empty() ? "" : "; " + r.checkpoint.note);
      for (const auto& n : r.notes) fmt::print("  resumed with another {}\n", n);
    }
  } else if (!a.init_from.empty()) {
    const ImportResult r =
        import_weights(mesh.world(), engine, a.init_from, {.io_timeout_s = a.checkpoint_timeout_s});
    if (lead)
      fmt::print("initialised from {} ({}, {}; {} read by rank 0 in {:.2f} s)\n", a.init_from, r.format,
                 r.dtype, format_bytes(static_cast<double>(r.bytes_read)), r.seconds);
  }

  std::unique_ptr<StepReporter> report;
  if (lead) {
    std::vector<std::string> notes;
    for (const auto& n : preset.notes)
      notes.push_back(fmt::format("model {}: accepted, not applied: {}", a.model, n));
    if (!config.unused_keys.empty())
      notes.push_back(
          fmt::format("config {}: accepted, unused by tierzero (they tune DeepSpeed's own machinery; "
                      "docs/deepspeed.md): {}",
                      a.config, fmt::join(config.unused_keys, ", ")));
    for (const auto& m : config.mapped_keys) notes.push_back(fmt::format("config {}: {}", a.config, m));
    print_run_header(stdout, {.model = model,
                              .data = data.describe(),
                              .val_data = val_data ? val_data->describe() : "",
                              .unigram_entropy_nats = entropy,
                              .topology = topo,
                              .run = run,
                              .engine = engine,
                              .compare = compare,
                              .compare_bytes_per_tier = compare_bytes,
                              .notes = notes,
                              .peak = peak});
    report = std::make_unique<StepReporter>(stdout, topo, run, engine, peak, a.metrics, !a.no_progress);
  }
  Checkpointing checkpointing{
      .world = &mesh.world(),
      .save = {.dir = run.save.dir,
               .keep = run.save.keep,
               .io_timeout_s = a.checkpoint_timeout_s,
               .kill_point = a.inject_save_kill,
               .kill_rank = a.inject_save_kill_rank,
               .kill_step = a.inject_save_kill_step},
      .every = run.save.every,
      .meta = checkpoint_meta(config, topo, run),
      .cursor = [&] { return loader.cursor(); },
      .on_save =
          [&](const SaveResult& s) {
            if (!lead) return;
            fmt::print("saved {} ({} in {:.3f} s, {:.0f} MB/s){}\n", s.path,
                       format_bytes(static_cast<double>(s.bytes)), s.seconds,
                       s.seconds > 0 ? s.bytes / s.seconds / 1e6 : 0.0,
                       s.removed.empty() ? "" : fmt::format("; removed {}", fmt::join(s.removed, ", ")));
            std::fflush(stdout);
          }};
  const std::vector<TrainStep> steps =
      run_training(mesh, engine, run, [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); },
                   {.on_step =
                        [&](const TrainStep& st) {
                          if (report)
                            report->on_step(st, static_cast<double>(engine.allocated_memory().total()));
                        },
                    .eval = val_loader ? &eval : nullptr,
                    .on_eval =
                        [&](const EvalRecord& r) {
                          if (report) report->on_eval(r);
                        },
                    .checkpointing = run.save.dir.empty() ? nullptr : &checkpointing,
                    .stop = {.flag = &process_stop_flag(), .world = &mesh.world(), .on_stop_requested = {}}});
  if (!a.weights_out.empty()) {
    const std::vector<float> params = engine.gather_master_params();  // collective
    if (lead) write_parameter_file(a.weights_out, engine.params(), params.data());
  }
  if (report) report->finish(steps, entropy, engine.skipped_steps(), compare, compare_bytes, a.weights_out);
}

int run_train(const TrainArgs& a) {
  // The configuration, read once (the --config file is parsed here only); it also gives the world's
  // fault options (check_collectives, start-up deadline, flight recorder).
  TrainConfig requested;
  try {
    check_checkpoint_args(a);
    requested = build_config(a);
  } catch (...) {
    // The same command line on every rank gives the same error: the first rank says it.
    return report_before_world(report_current_exception());
  }
  install_stop_signal_handlers();  // SIGINT/SIGTERM: every rank stops at the next step boundary
  return run_on_world({.topology = a.topology,
                       .device = parse_device_kind(a.device, "--device"),
                       .emulate = a.emulate,
                       .timeout_s = a.timeout_s,
                       .check_collectives = requested.check_collectives,
                       .startup_timeout_s = requested.startup_timeout_s,
                       .flight_recorder = requested.flight_recorder},
                      [&](Mesh& mesh) { train_on_rank(mesh, a, requested, 1); });
}

const bool train_registered = register_command(
    {"train",
     "Train a GPT under a partition plan: one process, or every rank under mpirun (default: tiny model, "
     "fortunes corpus)",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<TrainArgs>();
       const TrainConfig d;  // the defaults that run, shown by --help
       OptionSet o(sub, "train");
       o.text("--config", a->config,
              "DeepSpeed-style training JSON (train_micro_batch_size_per_gpu, zero_optimization, optimizer, "
              "scheduler, bf16, tierzero {plan, W_fwd, W_bwd, G, O, ...}); options given here override it",
              "none");
       o.text("--model", a->model,
              "model preset of models/ (gpt-tiny, gpt-small, gpt2, gpt-20b, ...) or a GPT-2 config.json "
              "(Hugging Face's as published)");
       o.text("--topology", a->topology,
              "topology preset (flat, frontier-mini, frontier, dgx-h100, ...) or JSON");
       o.flag("--emulate", a->emulate, "allow a multi-node topology on one machine");
       o.choice(
           "--device", a->device, device_kind_names(),
           "where the model state and activations live and the kernels run: cpu, emulated (a strict "
           "device on the CPU whose memory host code cannot touch), or cuda in a build with -DTZ_CUDA=ON "
           "(docs/backends.md)");
       std::vector<std::string> plans = PartitionPlan::preset_names();
       plans.push_back("auto");
       o.choice(
           "--plan", a->plan, plans,
           "partition plan preset, or auto (the cost model's best plan for this model, topology and batch: "
           "the top three are printed, then the run trains with the first)",
           d.plan + ", or the config's");
       o.text(
           "--data", a->data,
           "token shards (llm.c or nanoGPT .bin) or text files (bytes): a file, a comma-separated list or a "
           "glob ('data/train_*.bin'), memory-mapped",
           "the fortunes corpus");
       auto* val = o.text(
           "--val-data", a->val_data,
           "validation shards or text (as --data): its loss is evaluated, averaged over the world", "none");
       o.integer("--steps", a->steps, 0, kMaxCount,
                 "optimizer steps; with --resume the total to reach (0 only with --init-from and --save-dir: "
                 "the imported weights saved as a checkpoint)",
                 fmt::format("{}, or the config's tierzero.train_steps", d.train_steps));
       o.integer(
           "--micro-batch,--batch", a->micro_batch, 1, kMaxCount,
           "sequences per micro-batch per rank (DeepSpeed's train_micro_batch_size_per_gpu; --batch is an "
           "alias)",
           std::to_string(d.micro_batch));
       o.integer("--seq", a->seq, 1, kMaxCount, "sequence length (at most the model's n_positions)",
                 "the model's n_positions");
       o.integer("--grad-accum,--accumulation", a->grad_accum, 1, kMaxCount,
                 "micro-batches per optimizer step (gradient_accumulation_steps; --accumulation is an alias)",
                 std::to_string(d.grad_accum));
       o.real("--lr", a->lr, 0, 1, "peak learning rate (of the config's scheduler when it has one)",
              fmt::format("{}", d.adamw.lr), true);
       o.integer("--warmup", a->warmup, 0, kMaxCount, "warmup steps (the scheduler's warmup_num_steps)",
                 std::to_string(d.schedule.warmup_steps));
       o.real("--clip", a->clip, 0, 1e6, "max global gradient norm, 0 = off", fmt::format("{}", d.grad_clip));
       o.unsigned_integer("--seed", a->seed, UINT64_MAX, "initialisation and data-order seed",
                          std::to_string(d.seed));
       o.flag("--fp32", a->fp32, "weights travel and compute in fp32 (exactness runs); default bf16");
       o.flag("--recompute", a->recompute, "recompute each block's activations in backward");
       o.choice(
           "--collectives", a->collectives, {"hierarchical", "flat"},
           "how multi-tier collectives run: tier by tier, or one ring over the group (as DeepSpeed/NCCL)",
           "the plan's: hierarchical");
       o.integer("--prefetch", a->prefetch, 0, 64, "gathered ranges in flight beyond the one computing",
                 std::to_string(d.prefetch_depth));
       o.integer("--threads", a->threads, 1, 4096, "kernel + OpenBLAS threads per rank",
                 "cores / local ranks");
       o.integer("--log-every", a->log_every, 1, kMaxCount, "print every N steps (steps_per_print)",
                 std::to_string(d.steps_per_print));
       o.integer(
            "--eval-every", a->eval_every, 0, kMaxCount,
            "evaluate the validation loss every N steps (0: before the first and after the last step only)")
           ->needs(val);
       o.integer("--eval-batches", a->eval_batches, 1, 1 << 20, "micro-batches per rank per evaluation")
           ->needs(val);
       o.text("--metrics", a->metrics, "write one JSON line per step and evaluation to this file", "none");
       o.real_or_word("--peak-tflops", a->peak_tflops, 0, 1e6, {"auto"},
                      "peak per rank for MFU, in TFLOPS; auto: an sgemm measured at start-up", true);
       o.flag("--print-plan", a->print_plan, "print the plan, memory per rank and bytes per tier, then stop");
       o.choice("--compare-plan", a->compare_plan, PartitionPlan::preset_names(),
                "plan whose bytes per tier are shown beside");
       o.flag("--no-progress", a->no_progress, "no progress bar on a terminal");
       o.real("--timeout", a->timeout_s, 0, 86400, "seconds before a stuck collective aborts the job", "",
              true);
       o.flag(
           "--check-collectives", a->check_collectives,
           "every collective first agrees on (op, dtype, count, group, sequence); a difference stops every "
           "rank with one report naming the first rank that differs (config: tierzero.check_collectives)");
       o.real("--startup-timeout", a->startup_timeout_s, 0, kMaxStartupTimeoutS,
              "seconds MPI start-up may take before the rank gives up (config: tierzero.startup_timeout_s)",
              fmt::format("{:g}", d.startup_timeout_s), true);
       o.text("--flight-recorder", a->flight_recorder,
              "directory for each rank's flight recorder (rank-<r>.json), written on a failure or SIGUSR1; "
              "'off': never (config: tierzero.flight_recorder)",
              d.flight_recorder);
       o.text("--weights-out", a->weights_out,
              "after training, write the trained weights here (raw f32 + .json size table; `tierzero sample "
              "--weights` reads it)",
              "none");
       o.text("--init-out", a->init_out,
              "write the initial parameters (raw f32 + .json size table) here; without --steps, only that",
              "none");
       o.text("--save-dir", a->save_dir,
              "save checkpoints into this directory (shared by all ranks): DIR/step_N, DIR/latest", "none");
       o.integer("--save-every", a->save_every, 0, kMaxCount,
                 "steps between checkpoints (0: only after the last step)",
                 "the config's save_every, else 0");
       o.integer("--keep", a->keep, 0, kMaxCount, "complete checkpoints to keep, the newest (0: all)",
                 "the config's keep, else 0");
       o.text("--resume", a->resume,
              "continue a saved run: a checkpoint (DIR/step_N) or a save directory (its latest); any world "
              "size, plan or topology; --steps is the total to reach",
              "none");
       o.text("--init-from", a->init_from,
              "start from exported weights (fine-tuning): a safetensors GPT-2 file (Hugging Face names) or "
              "an llm.c gpt2_*.bin checkpoint; optimizer state starts at zero",
              "none");
       o.real("--checkpoint-timeout", a->checkpoint_timeout_s, 0, 1e6,
              "seconds a checkpoint save or load may take (longer than --timeout)", "", true);
       o.choice("--inject-save-kill", a->inject_save_kill, {"write", "manifest", "rename", "marker"},
                "fault injection: SIGKILL during a save at this point", "none")
           ->group("Testing");
       o.integer("--inject-save-kill-rank", a->inject_save_kill_rank, 0, 1 << 24,
                 "fault injection: the rank killed")
           ->group("Testing");
       o.integer("--inject-save-kill-step", a->inject_save_kill_step, -1, kMaxCount,
                 "fault injection: in the save of this step (-1: the first save)")
           ->group("Testing");
       o.integer("--inject-nan-step", a->inject_nan_step, -1, kMaxCount,
                 "fault injection: write a NaN into one rank's gradient at this step (0-based)")
           ->group("Testing");
       o.integer("--inject-nan-rank", a->inject_nan_rank, 0, 1 << 24,
                 "fault injection: the rank that gets the NaN")
           ->group("Testing");
       return [a] { return run_train(*a); };
     }});

}  // namespace
}  // namespace tz::cli
