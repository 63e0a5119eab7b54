// `tierzero train`: the command line of a training job (train/train_job.hpp runs it on every rank;
// cli/train_printer.hpp prints it). One process is a world of one; under mpirun/srun every rank runs
// this. Options bind directly to the job's fields, most of them to its TrainConfig: while the command
// line is parsed they write into TrainConfig's defaults (which --help shows); with --config FILE the
// file is then read, once, and every option given is applied over it again (CLI11 keeps each option's
// values), so an option given on the command line overrides the file, and what neither sets takes
// TrainConfig's default. SIGINT or SIGTERM, on any rank, stops every rank at the next step boundary
// (exit code 5).
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/exit_codes.hpp"
#include "cli/run_world.hpp"
#include "cli/train_printer.hpp"
#include "core/error.hpp"
#include "train/stop_request.hpp"
#include "train/train_job.hpp"

namespace tz::cli {
namespace {

constexpr long long kMaxCount = 1LL << 30;

struct TrainCommand {
  TrainJob job;
  std::string topology = "flat";
  bool emulate = false;
  std::string device = "cpu";
  std::optional<int> threads;  // none: default_threads()
  std::string metrics, peak_tflops = "auto";
  bool no_progress = false;
  double timeout_s = 300;
  // The options that write into job.config, applied again over a --config file; and the ones whose
  // being given changes a message or a rule.
  std::vector<CLI::Option*> config_options;
  CLI::Option *steps = nullptr, *micro_batch = nullptr, *save_every = nullptr, *keep = nullptr;
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

// The --config file (when given) under the options given: read here, once per process.
void read_config(TrainCommand& c) {
  TrainConfig& cfg = c.job.config;
  const std::string& path = c.job.config_origin;
  if (!path.empty()) {
    cfg = TrainConfig::load(path);
    for (CLI::Option* o : c.config_options)
      if (o->count() > 0) o->run_callback();
  }
  if (cfg.save_dir.empty() && (cfg.save_every != 0 || cfg.keep != 0)) {
    const std::string given =
        c.save_every->count() ? fmt::format("--save-every {}", cfg.save_every)
        : c.keep->count()     ? fmt::format("--keep {}", cfg.keep)
                          : fmt::format("config {}: save_every {}, keep {}", path, cfg.save_every, cfg.keep);
    fail_input(
        "{}: checkpoints need a save directory (--save-dir DIR, or the config's save_dir); without one "
        "nothing is saved",
        given);
  }
  c.job.micro_batch_origin = c.micro_batch->count() ? "--micro-batch"
                             : !path.empty()
                                 ? "train_micro_batch_size_per_gpu of " + path + ", or its default"
                                 : "the default";
}

int run_train(TrainCommand& c) {
  try {
    c.job.steps_given = c.steps->count() > 0;
    check_train_job(c.job, c.timeout_s);
    read_config(c);
  } catch (...) {
    // The same command line on every rank gives the same error: the first rank says it.
    return report_before_world(report_current_exception());
  }
  install_stop_signal_handlers();  // SIGINT/SIGTERM: every rank stops at the next step boundary
  c.job.device = parse_device_kind(c.device, "--device");
  const TrainConfig& cfg = c.job.config;
  return run_on_world({.topology = c.topology,
                       .device = c.job.device,
                       .emulate = c.emulate,
                       .timeout_s = c.timeout_s,
                       .check_collectives = cfg.check_collectives,
                       .startup_timeout_s = cfg.startup_timeout_s,
                       .flight_recorder = cfg.flight_recorder},
                      [&](Mesh& mesh) {
                        TrainJob job = c.job;
                        job.threads = c.threads.value_or(default_threads());
                        job.ranks_on_host = launch_local_size();
                        TrainPrinter printer(mesh.world().rank() == 0, {.peak_tflops = c.peak_tflops,
                                                                        .metrics = c.metrics,
                                                                        .progress_bar = !c.no_progress,
                                                                        .model = c.job.model,
                                                                        .config_origin = c.job.config_origin,
                                                                        .weights_out = c.job.weights_out});
                        run_train_job(mesh, job, printer);
                      });
}

const bool train_registered = register_command(
    {"train",
     "Train a GPT under a partition plan: one process, or every rank under mpirun (default: tiny model, "
     "fortunes corpus)",
     [](CLI::App& sub) -> RunFn {
       auto c = std::make_shared<TrainCommand>();
       TrainJob& j = c->job;
       TrainConfig& cfg = j.config;
       // An option that writes into the configuration (applied again over a --config file).
       const auto config_option = [&c](CLI::Option* opt) {
         c->config_options.push_back(opt);
         return opt;
       };
       const TrainConfig d;  // the defaults that run, shown by --help
       OptionSet o(sub, "train");
       o.text("--config", j.config_origin,
              "DeepSpeed-style training JSON (train_micro_batch_size_per_gpu, zero_optimization, optimizer, "
              "scheduler, bf16, tierzero {plan, W_fwd, W_bwd, G, O, ...}); options given here override it",
              "none");
       o.text("--model", j.model,
              "model preset of models/ (gpt-tiny, gpt-small, gpt2, gpt-20b, ...) or a GPT-2 config.json "
              "(Hugging Face's as published)");
       o.text("--topology", c->topology,
              "topology preset (flat, frontier-mini, frontier, dgx-h100, ...) or JSON");
       o.flag("--emulate", c->emulate, "allow a multi-node topology on one machine");
       o.choice(
           "--device", c->device, device_kind_names(),
           "where the model state and activations live and the kernels run: cpu, emulated (a strict "
           "device on the CPU whose memory host code cannot touch), or cuda in a build with -DTZ_CUDA=ON "
           "(docs/backends.md)");
       std::vector<std::string> plans = PartitionPlan::preset_names();
       plans.push_back("auto");
       config_option(o.choice(
           "--plan", cfg.plan, plans,
           "partition plan preset, or auto (the cost model's best plan for this model, topology and batch: "
           "the top three are printed, then the run trains with the first)",
           d.plan + ", or the config's"));
       o.text(
           "--data", j.data,
           "token shards (llm.c or nanoGPT .bin) or text files (bytes): a file, a comma-separated list or a "
           "glob ('data/train_*.bin'), memory-mapped",
           "the fortunes corpus");
       auto* val = o.text(
           "--val-data", j.val_data,
           "validation shards or text (as --data): its loss is evaluated, averaged over the world", "none");
       c->steps = config_option(o.integer(
           "--steps", cfg.train_steps, 0, kMaxCount,
           "optimizer steps; with --resume the total to reach (0 only with --init-from and --save-dir: "
           "the imported weights saved as a checkpoint)",
           fmt::format("{}, or the config's tierzero.train_steps", d.train_steps)));
       c->micro_batch = config_option(o.integer(
           "--micro-batch,--batch", cfg.micro_batch, 1, kMaxCount,
           "sequences per micro-batch per rank (DeepSpeed's train_micro_batch_size_per_gpu; --batch is an "
           "alias)",
           std::to_string(d.micro_batch)));
       config_option(o.integer("--seq", cfg.seq_len, 1, kMaxCount,
                               "sequence length (at most the model's n_positions)",
                               "the model's n_positions"));
       config_option(o.integer(
           "--grad-accum,--accumulation", cfg.grad_accum, 1, kMaxCount,
           "micro-batches per optimizer step (gradient_accumulation_steps; --accumulation is an alias)",
           std::to_string(d.grad_accum)));
       config_option(o.real(
           "--lr",
           [&cfg](double lr) {
             // The peak of whichever schedule runs: WarmupLR and WarmupDecayLR take theirs from
             // warmup_max_lr.
             cfg.adamw.lr = lr;
             if (cfg.schedule.type == "WarmupLR" || cfg.schedule.type == "WarmupDecayLR")
               cfg.schedule.warmup_max_lr = lr;
           },
           0, 1, "peak learning rate (of the config's scheduler when it has one)",
           fmt::format("{}", d.adamw.lr), true));
       config_option(o.integer("--warmup", cfg.schedule.warmup_steps, 0, kMaxCount,
                               "warmup steps (the scheduler's warmup_num_steps)",
                               std::to_string(d.schedule.warmup_steps)));
       config_option(o.real("--clip", cfg.grad_clip, 0, 1e6, "max global gradient norm, 0 = off",
                            fmt::format("{}", d.grad_clip)));
       config_option(o.unsigned_integer("--seed", cfg.seed, UINT64_MAX, "initialisation and data-order seed",
                                        std::to_string(d.seed)));
       config_option(o.flag(
           "--fp32", [&cfg] { cfg.bf16 = false; },
           "weights travel and compute in fp32 (exactness runs); default bf16"));
       config_option(
           o.flag("--recompute", cfg.activation_recompute, "recompute each block's activations in backward"));
       config_option(o.choice(
           "--collectives", cfg.collectives, {"hierarchical", "flat"},
           "how multi-tier collectives run: tier by tier, or one ring over the group (as DeepSpeed/NCCL)",
           "the plan's: hierarchical"));
       config_option(o.integer(
           "--prefetch",
           [&cfg](long long depth) {
             cfg.prefetch_depth = static_cast<int>(depth);
             cfg.prefetch_elements.reset();  // the depth given replaces stage3_prefetch_bucket_size
           },
           0, 64, "gathered ranges in flight beyond the one computing", std::to_string(d.prefetch_depth)));
       o.integer("--threads", c->threads, 1, 4096, "kernel + OpenBLAS threads per rank",
                 "cores / local ranks");
       config_option(o.integer("--log-every", cfg.steps_per_print, 1, kMaxCount,
                               "print every N steps (steps_per_print)", std::to_string(d.steps_per_print)));
       o.integer(
            "--eval-every", j.eval_every, 0, kMaxCount,
            "evaluate the validation loss every N steps (0: before the first and after the last step only)")
           ->needs(val);
       o.integer("--eval-batches", j.eval_batches, 1, 1 << 20, "micro-batches per rank per evaluation")
           ->needs(val);
       o.text("--metrics", c->metrics, "write one JSON line per step and evaluation to this file", "none");
       o.real_or_word("--peak-tflops", c->peak_tflops, 0, 1e6, {"auto"},
                      "peak per rank for MFU, in TFLOPS; auto: an sgemm measured at start-up", true);
       o.flag("--print-plan", j.print_plan, "print the plan, memory per rank and bytes per tier, then stop");
       o.choice("--compare-plan", j.compare_plan, PartitionPlan::preset_names(),
                "plan whose bytes per tier are shown beside");
       o.flag("--no-progress", c->no_progress, "no progress bar on a terminal");
       o.real("--timeout", c->timeout_s, 0, 86400, "seconds before a stuck collective aborts the job", "",
              true);
       config_option(o.flag(
           "--check-collectives", cfg.check_collectives,
           "every collective first agrees on (op, dtype, count, group, sequence); a difference stops every "
           "rank with one report naming the first rank that differs (config: tierzero.check_collectives)"));
       config_option(o.real(
           "--startup-timeout", cfg.startup_timeout_s, 0, kMaxStartupTimeoutS,
           "seconds MPI start-up may take before the rank gives up (config: tierzero.startup_timeout_s)",
           fmt::format("{:g}", d.startup_timeout_s), true));
       config_option(o.text(
           "--flight-recorder", cfg.flight_recorder,
           "directory for each rank's flight recorder (rank-<r>.json), written on a failure or SIGUSR1; "
           "'off': never (config: tierzero.flight_recorder)",
           d.flight_recorder));
       o.text("--weights-out", j.weights_out,
              "after training, write the trained weights here (raw f32 + .json size table; `tierzero sample "
              "--weights` reads it)",
              "none");
       o.text("--init-out", j.init_out,
              "write the initial parameters (raw f32 + .json size table) here; without --steps, only that",
              "none");
       config_option(o.text(
           "--save-dir", cfg.save_dir,
           "save checkpoints into this directory (shared by all ranks): DIR/step_N, DIR/latest", "none"));
       c->save_every = config_option(o.integer("--save-every", cfg.save_every, 0, kMaxCount,
                                               "steps between checkpoints (0: only after the last step)",
                                               "the config's save_every, else 0"));
       c->keep = config_option(o.integer("--keep", cfg.keep, 0, kMaxCount,
                                         "complete checkpoints to keep, the newest (0: all)",
                                         "the config's keep, else 0"));
       o.text("--resume", j.resume,
              "continue a saved run: a checkpoint (DIR/step_N) or a save directory (its latest); any world "
              "size, plan or topology; --steps is the total to reach",
              "none");
       o.text("--init-from", j.init_from,
              "start from exported weights (fine-tuning): a safetensors GPT-2 file (Hugging Face names) or "
              "an llm.c gpt2_*.bin checkpoint; optimizer state starts at zero",
              "none");
       o.real("--checkpoint-timeout", j.checkpoint_timeout_s, 0, 1e6,
              "seconds a checkpoint save or load may take (longer than --timeout)", "", true);
       o.choice("--inject-save-kill", j.inject_save_kill, {"write", "manifest", "rename", "marker"},
                "fault injection: SIGKILL during a save at this point", "none")
           ->group("Testing");
       o.integer("--inject-save-kill-rank", j.inject_save_kill_rank, 0, 1 << 24,
                 "fault injection: the rank killed")
           ->group("Testing");
       o.integer("--inject-save-kill-step", j.inject_save_kill_step, -1, kMaxCount,
                 "fault injection: in the save of this step (-1: the first save)")
           ->group("Testing");
       o.integer("--inject-nan-step", j.inject_nan_step, -1, kMaxCount,
                 "fault injection: write a NaN into one rank's gradient at this step (0-based)")
           ->group("Testing");
       o.integer("--inject-nan-rank", j.inject_nan_rank, 0, 1 << 24,
                 "fault injection: the rank that gets the NaN")
           ->group("Testing");
       return [c] { return run_train(*c); };
     }});

}  // namespace
}  // namespace tz::cli
