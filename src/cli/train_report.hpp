// What `tierzero train` shows a user, on rank 0: the run's header (model, data, world, plan, optimizer
// and schedule, the MFU peak and where it comes from, memory, bytes per tier next to a comparison plan
// and per collective kind, the config keys accepted but unused), one line per step (loss, learning
// rate, gradient norm, tokens/s, MFU, step time across ranks, bytes per tier, memory, ETA), the
// validation loss, a progress bar on a terminal, the closing lines, and the same values as JSON
// lines in a metrics file (`tierzero plot` draws them; docs/metrics.md lists every field). The
// libraries return values; this file is the only place that formats them.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/compute_peak.hpp"
#include "cli/progress_line.hpp"
#include "core/output_file.hpp"
#include "engine/sharded_engine.hpp"
#include "model/gpt_config.hpp"
#include "topology/topology.hpp"
#include "train/train_run.hpp"
#include "train/train_session.hpp"

namespace tz::cli {

// "12.3 MiB"-style sizes.
std::string format_bytes(double bytes);

struct RunHeader {
  const GptConfig& model;
  std::string data;      // the data set as ShardSet::describe() tells it
  std::string val_data;  // empty: no validation
  double unigram_entropy_nats = 0;
  const Topology& topology;
  const TrainRun& run;
  const ShardedEngine& engine;
  const PartitionPlan& compare;                          // the plan whose bytes are shown beside
  std::map<std::string, double> compare_bytes_per_tier;  // per step
  std::vector<std::string> notes;                        // one line each (keys accepted but not used)
  PeakRate peak;
};
void print_run_header(std::FILE* out, const RunHeader& h);

// The plan, memory per rank and bytes per tier, without allocating the model (--print-plan).
void print_plan_only(std::FILE* out, const GptConfig& model, const Topology& topo, const TrainRun& run,
                     const PartitionPlan& compare);

// Bytes per rank per step by collective purpose (weight_gather_fwd, grad_reduce, ...) of a schedule.
std::map<std::string, double> bytes_per_collective_kind(const StepSchedule& schedule);

class StepReporter {
 public:
  // `metrics_path` empty: no metrics file. InputError when it cannot be opened.
  StepReporter(std::FILE* out, const Topology& topology, const TrainRun& run, const ShardedEngine& engine,
               PeakRate peak, std::string metrics_path, bool progress_bar);
  // After each step: the log line (every run.log_every steps, the last, and any skipped step), the
  // metrics line, the progress bar. InputError naming the file when a metrics write fails.
  void on_step(const TrainStep& step, double memory_bytes);
  void on_eval(const EvalRecord& eval);
  // The closing lines: final loss beside the data's entropy and the last validation loss, tokens/s
  // over the whole run (all tokens / all step time), bytes per tier.
  void finish(const std::vector<TrainStep>& steps, double unigram_entropy_nats, int skipped,
              const PartitionPlan& compare, const std::map<std::string, double>& compare_bytes_per_tier,
              const std::string& weights_out);

 private:
  void write_metrics(const nlohmann::json& line, const std::string& what);

  std::FILE* out_;
  const Topology& topo_;
  const TrainRun& run_;
  PeakRate peak_;
  bool warned_mfu_ = false;  // the note on an MFU above 100% is printed once
  double flops_per_token_ = 0;
  std::map<std::string, double> bytes_per_kind_;
  std::string metrics_path_;
  std::optional<OutputFile> metrics_;  // written in place, a line per step (read while it grows)
  std::unique_ptr<ProgressBar> bar_;
  std::chrono::steady_clock::time_point start_;
  std::optional<EvalRecord> last_eval_;
};

}  // namespace tz::cli
