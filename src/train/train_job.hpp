// One `tierzero train` job on one rank of a mesh, from its request to its end, in this order: the
// model; --init-out's initial weights; the plan (`auto`: the cost model's choice,
// train/auto_plan.hpp); the run (train/train_run.hpp); --print-plan stops there; the memory the run
// needs against the machine's; this rank's data and validation streams; the agreement that every rank
// runs the same thing; the save directory's lock; the engine; where it starts (--resume a checkpoint,
// --init-from exported weights); the loop (train/train_session.hpp), with evaluation and checkpoint
// saves; --weights-out. Collective over the mesh: every rank calls run_train_job with the same job.
//
// The job returns values and prints nothing: a TrainJobObserver sees each phase (the CLI prints them,
// on rank 0: cli/train_report.hpp). SIGINT or SIGTERM, on any rank, stops every rank at the next step
// boundary (train/stop_request.hpp: StopRequested is thrown), after saving that step when saving is
// configured.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/weight_import.hpp"
#include "comm/mesh.hpp"
#include "data/shard_set.hpp"
#include "device/backend.hpp"
#include "engine/sharded_engine.hpp"
#include "model/model_preset.hpp"
#include "plan/partition_plan.hpp"
#include "train/auto_plan.hpp"
#include "train/train_config.hpp"
#include "train/train_run.hpp"
#include "train/train_session.hpp"

namespace tz {

// What a training job is asked to do: the training configuration and the inputs and outputs around it.
struct TrainJob {
  TrainConfig config;         // the --config file (or the defaults) with the options given over it
  std::string config_origin;  // the --config file, for messages ("": none)
  std::string micro_batch_origin = "the default";  // what set the micro-batch, for the memory message
  std::string model = "gpt-tiny";                  // preset name or GPT-2 config.json
  DeviceKind device = DeviceKind::cpu;
  int threads = 1;        // kernel threads per rank
  int ranks_on_host = 1;  // ranks sharing this host's memory
  std::string data;       // token shards or text; "": the fortunes corpus
  std::string val_data;   // "": no evaluation
  int eval_every = 0, eval_batches = 20;
  std::string compare_plan = "zero3";  // the plan whose bytes per tier are shown beside
  bool print_plan = false;             // stop after the plan
  bool steps_given = false;            // false with init_out: only write the initial weights
  std::string init_out;                // write the initial parameters here ("": no)
  std::string weights_out;             // write the trained weights here ("": no)
  std::string resume;                  // a checkpoint or save directory to continue ("": no)
  std::string init_from;               // exported weights to start from ("": no)
  double checkpoint_timeout_s = 1800;  // a checkpoint save or load
  // Fault injection, for tests: a NaN in one rank's gradient; a SIGKILL during a save.
  int inject_nan_step = -1, inject_nan_rank = 0;
  std::string inject_save_kill;
  int inject_save_kill_rank = 0, inject_save_kill_step = -1;
};

// The run as it is about to take its first step, for a header.
struct TrainJobStart {
  const ModelPreset& preset;
  const TrainConfig& config;  // with the planner's choice when the plan was "auto"
  const Topology& topology;
  const TrainRun& run;
  const ShardedEngine& engine;
  const ShardSet& data;
  const ShardSet* val_data;  // null: no validation
  double unigram_entropy_nats = 0;
  const PartitionPlan& compare;
  const std::map<std::string, double>& compare_bytes_per_tier;
};

// Sees each phase of a job, on every rank (the observer decides which rank presents). The defaults do
// nothing.
class TrainJobObserver {
 public:
  virtual ~TrainJobObserver() = default;
  virtual void on_initial_parameters(const std::string& /*path*/, std::size_t /*floats*/,
                                     std::uint64_t /*seed*/) {}
  virtual void on_auto_plan(const Topology& /*topo*/, const AutoPlan& /*choice*/) {}
  virtual void on_plan_only(const GptConfig& /*model*/, const Topology& /*topo*/, const TrainRun& /*run*/,
                            const PartitionPlan& /*compare*/) {}
  // Right after the engine exists, before it loads any state. Collective: every rank is here.
  virtual void on_engine(Mesh& /*mesh*/, const TrainRun& /*run*/) {}
  virtual void on_resumed(const ResumedRun& /*r*/) {}
  virtual void on_imported(const std::string& /*path*/, const ImportResult& /*r*/) {}
  virtual void on_start(const TrainJobStart& /*start*/) {}
  virtual void on_step(const TrainStep& /*step*/, double /*memory_bytes*/) {}
  virtual void on_eval(const EvalRecord& /*eval*/) {}
  virtual void on_save(const SaveResult& /*save*/) {}
  virtual void on_finish(const std::vector<TrainStep>& /*steps*/, int /*skipped_steps*/) {}
};

// Refuses, before anything starts, the job's argument combinations that cannot run (InputError
// naming the options): --steps 0 without --init-from and --save-dir, --resume with --init-from, a
// checkpoint timeout not longer than the collectives' one, output files that cannot be written.
void check_train_job(const TrainJob& job, double collective_timeout_s);

// Runs the job on this rank of `mesh` (collective).
void run_train_job(Mesh& mesh, const TrainJob& job, TrainJobObserver& observer);

}  // namespace tz
