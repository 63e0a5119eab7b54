// A training run on every rank of a mesh, once its parts exist (the CLI builds them: the run from
// make_train_run, the engine, this rank's data streams): the agreement that every rank runs the same
// thing, where it starts (a checkpoint to resume, or weights to fine-tune), then the loop, with
// evaluation on a validation stream between steps, checkpoint saves as the run's SaveSchedule says
// and the stop vote (SIGINT/SIGTERM). The session returns values; presenting them (log lines, metrics
// files, progress bars) is the caller's, through hooks.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_resume.hpp"
#include "checkpoint/checkpoint_save.hpp"
#include "comm/mesh.hpp"
#include "data/batch_fn.hpp"
#include "data/data_loader.hpp"
#include "engine/sharded_engine.hpp"
#include "model/gpt_config.hpp"
#include "topology/topology.hpp"
#include "train/stop_request.hpp"
#include "train/train_config.hpp"
#include "train/train_run.hpp"

namespace tz {

// Before training: every rank proves it runs the same configuration, model, topology, plan and data
// (train/config_agreement.hpp). Collective; the same InputError on every rank when one differs.
void check_run_agreement(Mesh& mesh, const TrainConfig& config, const GptConfig& model, const TrainRun& run,
                         std::string_view data_identity);

// One step as the loop saw it: the engine's record and the spread of the step's wall time over the
// ranks (the slowest rank is the step's real time; a straggler shows as max >> min).
struct TrainStep {
  EngineStep engine;
  double min_step_s = 0;
  double max_step_s = 0;
  std::vector<CpuTermSeconds> cpu_by_rank;  // every rank's EngineStep::cpu, by rank
};

// Evaluation between steps: `batches` micro-batches of the validation stream, from its start every
// time (rewind), so successive evaluations see the same data.
struct Evaluation {
  int every = 0;    // steps between evaluations; 0: only before the first and after the last step
  int batches = 1;  // micro-batches per evaluation (per rank)
  BatchFn next_batch;
  std::function<void()> rewind;
};

struct EvalRecord {
  int step = 0;    // optimizer steps done when it ran (0: before training)
  float loss = 0;  // mean over the world's batches
  double seconds = 0;
};

// Saving from the loop. The checkpoint records the run's configuration, topology, plan and schedule
// (meta), and the data position after the step (cursor()).
struct Checkpointing {
  Communicator* world = nullptr;  // the engine's world
  SaveOptions save;               // directory, keep, I/O timeout (and fault injection for tests)
  int every = 0;                  // after every N-th step and after the last; 0: after the last only
  CheckpointMeta meta;
  std::function<DataCursor()> cursor;
  std::function<void(const SaveResult&)> on_save;
};
// What a checkpoint for `run` records besides the engine's state (the cursor is filled at each save).
CheckpointMeta checkpoint_meta(const TrainConfig& config, const Topology& topo, const TrainRun& run);

// Stopping early on request (train/stop_request.hpp): after every step but the last, the ranks agree
// over `world` whether any rank's `flag` is set; if so, every rank saves a checkpoint of that step
// (when checkpointing is configured and the step updated), runs `on_stop_requested` with the steps
// done and throws StopRequested. No flag: the loop never stops early (and issues no vote).
struct StopControl {
  const StopFlag* flag = nullptr;  // this rank's
  Communicator* world = nullptr;
  std::function<void(int steps_done)> on_stop_requested = {};
};

struct TrainHooks {
  std::function<void(const TrainStep&)> on_step = {};
  const Evaluation* eval = nullptr;  // none: no evaluation
  std::function<void(const EvalRecord&)> on_eval = {};
  const Checkpointing* checkpointing = nullptr;  // none: no checkpoints
  StopControl stop = {};                         // no flag: the loop never stops early
};

// The loop: from engine.steps_done() (0, or the resumed step) to run.steps optimizer steps of
// `engine`, each over run.grad_accum micro-batches from `next_batch`. After each step, in this order:
// `on_step` sees its record, the evaluation runs when `hooks.eval` asks (before the first step, every
// `every` steps and after the last), a checkpoint is saved (with `hooks.checkpointing`: after every
// `every`-th step and after the last; a step whose update was skipped (non-finite values) is never
// saved: its save moves to the next step that updated), then the ranks vote on a stop request
// (skipped after the last step). A run of 0 steps from step 0 saves its starting state (imported
// weights as a checkpoint). Collective over the mesh.
std::vector<TrainStep> run_training(Mesh& mesh, ShardedEngine& engine, const TrainRun& run,
                                    const BatchFn& next_batch, const TrainHooks& hooks = {});

// Continues a saved run: the engine's state and step from the checkpoint at `path` (a step directory or
// a save directory), the loader at the saved data position. `notes` lists what differs from the run that
// wrote it (world size, topology, plan, configuration keys): allowed, reported. Collective.
struct ResumedRun {
  ResumeResult checkpoint;
  std::vector<std::string> notes;
};
ResumedRun resume_run(Mesh& mesh, ShardedEngine& engine, DataLoader& loader, const std::string& path,
                      const TrainConfig& config, const TrainRun& run, double io_timeout_s);

}  // namespace tz
