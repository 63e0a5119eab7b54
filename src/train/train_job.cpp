// A training job on one rank (train_job.hpp).
#include "train/train_job.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "checkpoint/checkpoint_save.hpp"
#include "checkpoint/save_dir_lock.hpp"
#include "core/error.hpp"
#include "data/data_loader.hpp"
#include "data/token_data.hpp"
#include "model/gpt_init.hpp"
#include "model/parameter_file.hpp"
#include "train/run_memory.hpp"
#include "train/stop_request.hpp"

namespace tz {
namespace {

constexpr long long kMaxJobCount = 1LL << 30;  // --steps' upper bound, for its message

// Memory a rank may use: this host's physical memory over the ranks sharing it.
double available_bytes_per_rank(int ranks_on_host) {
  const double bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  return bytes / std::max(1, ranks_on_host);
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
std::size_t write_initial_parameters(const std::string& path, const GptConfig& model, std::uint64_t seed) {
  const ParameterLayout layout(model);
  std::vector<float> params(layout.total_numel());
  gpt2_init(params.data(), layout, seed);
  write_parameter_file(path, layout, params.data());
  return layout.total_numel();
}

}  // namespace

void check_train_job(const TrainJob& job, double collective_timeout_s) {
  if (job.steps_given && job.config.train_steps == 0 &&
      (job.init_from.empty() || job.config.save_dir.empty()))
    fail_input(
        "--steps 0: must be an integer in [1, {}] (0 only with --init-from FILE and --save-dir DIR, which "
        "save the imported weights as a checkpoint)",
        kMaxJobCount);
  if (!job.resume.empty() && !job.init_from.empty())
    fail_input("--resume {} and --init-from {}: give one (a resumed run already has its weights)", job.resume,
               job.init_from);
  if (!(job.checkpoint_timeout_s > collective_timeout_s))
    fail_input(
        "--checkpoint-timeout {} must be longer than --timeout {} (checkpoint I/O outlasts a collective)",
        job.checkpoint_timeout_s, collective_timeout_s);
  if (!job.inject_save_kill.empty()) check_kill_point(job.inject_save_kill, "--inject-save-kill");
  // Output files are checked before the run, not found unwritable after it.
  if (!job.weights_out.empty()) check_parameter_file_path(job.weights_out, "--weights-out");
  if (!job.init_out.empty()) check_parameter_file_path(job.init_out, "--init-out");
}

void run_train_job(Mesh& mesh, const TrainJob& job, TrainJobObserver& observer) {
  const Topology& topo = mesh.topology();
  const int world = mesh.world().size(), rank = mesh.world().rank();
  const ModelPreset preset = load_model(job.model);
  const GptConfig& model = preset.config;
  if (!job.init_out.empty()) {
    if (rank == 0)
      observer.on_initial_parameters(
          job.init_out, write_initial_parameters(job.init_out, model, job.config.seed), job.config.seed);
    if (!job.steps_given) return;  // --init-out alone: only that
  }
  TrainConfig config = job.config;
  if (config.plan == kAutoPlan) {
    // Every rank computes the same pure choice, so no rank needs to hear it from another.
    const AutoPlan choice = choose_auto_plan(config, model, topo);
    observer.on_auto_plan(topo, choice);
    config = choice.config;
  }
  TrainRun run = make_train_run(config, model, topo, world);
  run.engine.threads = job.threads;
  run.engine.device = job.device;
  run.engine.inject_nan_step = job.inject_nan_step;
  run.engine.inject_nan_rank = job.inject_nan_rank;
  // The comparison plan moves the same model with the same options, unquantized.
  PlanOptions compare_options = run.plan.options();
  compare_options.qwz = compare_options.qgz = false;
  const PartitionPlan compare = PartitionPlan::preset(job.compare_plan, topo).with_options(compare_options);
  if (job.print_plan) {
    observer.on_plan_only(model, topo, run, compare);
    return;
  }
  check_run_memory(run_memory_per_rank(model, topo, run), available_bytes_per_rank(job.ranks_on_host), run,
                   job.micro_batch_origin);

  const ShardSet data = job.data.empty() ? ShardSet::from_tokens(load_fortunes_corpus().tokens, kFortunesDir)
                                         : ShardSet::open(job.data);
  DataLoader loader = make_loader(data, run, rank, world, run.engine.seed, model);
  std::optional<ShardSet> val_data;
  std::optional<DataLoader> val_loader;
  Evaluation eval;
  if (!job.val_data.empty()) {
    val_data = ShardSet::open(job.val_data);
    // Its own fixed order (seed 0), the same every evaluation: rewound to its start each time.
    val_loader.emplace(make_loader(*val_data, run, rank, world, 0, model));
    const DataCursor start = val_loader->cursor();
    eval = {.every = job.eval_every,
            .batches = job.eval_batches,
            .next_batch = [&](std::int32_t* in, std::int32_t* tg) { val_loader->next(in, tg); },
            .rewind = [&, start] { val_loader->restore(start); }};
  }
  std::string identity = fmt::format("{}:{:016x}", data.spec(), data.fingerprint());
  if (val_data)
    identity += fmt::format("|val {}:{:016x}:{}:{}", val_data->spec(), val_data->fingerprint(),
                            job.eval_every, job.eval_batches);
  check_run_agreement(mesh, config, model, run, identity);
  // The save directory is made, checked and locked before any work it would hold.
  std::optional<SaveDirLock> save_dir_lock;
  if (!run.save.dir.empty()) save_dir_lock.emplace(mesh.world(), run.save.dir, job.checkpoint_timeout_s);
  ShardedEngine engine(mesh, model, run.plan, run.engine);
  observer.on_engine(mesh, run);
  const double entropy = data.unigram_entropy_nats(model.vocab_size);
  const auto compare_bytes = step_bytes_per_tier(model, topo, compare);
  if (!job.resume.empty()) {
    observer.on_resumed(resume_run(mesh, engine, loader, job.resume, config, run, job.checkpoint_timeout_s));
  } else if (!job.init_from.empty()) {
    observer.on_imported(job.init_from, import_weights(mesh.world(), engine, job.init_from,
                                                       {.io_timeout_s = job.checkpoint_timeout_s}));
  }
  observer.on_start({.preset = preset,
                     .config = config,
                     .topology = topo,
                     .run = run,
                     .engine = engine,
                     .data = data,
                     .val_data = val_data ? &*val_data : nullptr,
                     .unigram_entropy_nats = entropy,
                     .compare = compare,
                     .compare_bytes_per_tier = compare_bytes});
  Checkpointing checkpointing{.world = &mesh.world(),
                              .save = {.dir = run.save.dir,
                                       .keep = run.save.keep,
                                       .io_timeout_s = job.checkpoint_timeout_s,
                                       .kill_point = job.inject_save_kill,
                                       .kill_rank = job.inject_save_kill_rank,
                                       .kill_step = job.inject_save_kill_step},
                              .every = run.save.every,
                              .meta = checkpoint_meta(config, topo, run),
                              .cursor = [&] { return loader.cursor(); },
                              .on_save = [&](const SaveResult& s) { observer.on_save(s); }};
  const std::vector<TrainStep> steps =
      run_training(mesh, engine, run, [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); },
                   {.on_step =
                        [&](const TrainStep& st) {
                          observer.on_step(st, static_cast<double>(engine.allocated_memory().total()));
                        },
                    .eval = val_loader ? &eval : nullptr,
                    .on_eval = [&](const EvalRecord& r) { observer.on_eval(r); },
                    .checkpointing = run.save.dir.empty() ? nullptr : &checkpointing,
                    .stop = {.flag = &process_stop_flag(), .world = &mesh.world(), .on_stop_requested = {}}});
  if (!job.weights_out.empty()) {
    const std::vector<float> params = engine.gather_master_params();  // collective
    if (rank == 0) write_parameter_file(job.weights_out, engine.params(), params.data());
  }
  observer.on_finish(steps, engine.skipped_steps());
}

}  // namespace tz
