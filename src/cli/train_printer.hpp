// What `tierzero train` prints while a job runs (train/train_job.hpp): rank 0 presents each phase
// (the --plan auto choice, --print-plan, the header, a line per step, saves, the closing lines,
// cli/train_report.hpp); every rank takes part in measuring the MFU peak.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli/compute_peak.hpp"
#include "cli/train_report.hpp"
#include "train/train_job.hpp"

namespace tz::cli {

struct TrainPrinterOptions {
  std::string peak_tflops = "auto";  // --peak-tflops: a figure, or "auto" (measured at start-up)
  std::string metrics;               // --metrics: a JSON line per step ("": none)
  bool progress_bar = true;
  std::string model;          // --model as given, for notes
  std::string config_origin;  // --config as given, for notes
  std::string weights_out;    // --weights-out, named in the closing lines
};

class TrainPrinter : public TrainJobObserver {
 public:
  TrainPrinter(bool lead, TrainPrinterOptions options) : lead_(lead), o_(std::move(options)) {}

  void on_initial_parameters(const std::string& path, std::size_t floats, std::uint64_t seed) override;
  void on_auto_plan(const Topology& topo, const AutoPlan& choice) override;
  void on_plan_only(const GptConfig& model, const Topology& topo, const TrainRun& run,
                    const PartitionPlan& compare) override;
  void on_engine(Mesh& mesh, const TrainRun& run) override;  // measures the peak (collective)
  void on_resumed(const ResumedRun& r) override;
  void on_imported(const std::string& path, const ImportResult& r) override;
  void on_start(const TrainJobStart& start) override;
  void on_step(const TrainStep& step, double memory_bytes) override;
  void on_eval(const EvalRecord& eval) override;
  void on_save(const SaveResult& save) override;
  void on_finish(const std::vector<TrainStep>& steps, int skipped_steps) override;

 private:
  bool lead_;
  TrainPrinterOptions o_;
  PeakRate peak_;
  std::unique_ptr<StepReporter> report_;  // rank 0, from on_start
  std::optional<TrainJobStart> start_;
};

}  // namespace tz::cli
