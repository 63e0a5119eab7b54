// What `tierzero train` prints while a job runs (train_printer.hpp).
#include "cli/train_printer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "cli/auto_plan.hpp"

namespace tz::cli {
namespace {

// Collective: with "auto" every rank measures at once and all take the fastest rank's figure, so
// that a rank whose measurement was slowed (a peer's set-up on its core) does not report an MFU
// above what its core can do.
PeakRate peak_rate(Mesh& mesh, const std::string& peak_tflops, int threads, DeviceKind device) {
  const Topology& topo = mesh.topology();
  if (peak_tflops != "auto")
    return {std::stod(peak_tflops) * 1e12,
            fmt::format("{} TFLOPS per rank, given by --peak-tflops", peak_tflops)};
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

}  // namespace

void TrainPrinter::on_initial_parameters(const std::string& path, std::size_t floats, std::uint64_t seed) {
  if (lead_)
    fmt::print("wrote initial parameters ({} floats, seed {}) to {} and {}.json\n", floats, seed, path, path);
}

void TrainPrinter::on_auto_plan(const Topology& topo, const AutoPlan& choice) {
  if (lead_) print_auto_plan(stdout, topo, choice);
}

void TrainPrinter::on_plan_only(const GptConfig& model, const Topology& topo, const TrainRun& run,
                                const PartitionPlan& compare) {
  if (lead_) print_plan_only(stdout, model, topo, run, compare);
}

void TrainPrinter::on_engine(Mesh& mesh, const TrainRun& run) {
  peak_ = peak_rate(mesh, o_.peak_tflops, run.engine.threads, run.engine.device);
}

void TrainPrinter::on_resumed(const ResumedRun& r) {
  if (!lead_) return;
  fmt::print("resumed from {} at step {} ({} read by rank 0 in {:.3f} s){}\n", r.checkpoint.path,
             r.checkpoint.step, format_bytes(static_cast<double>(r.checkpoint.bytes_read)),
             r.checkpoint.seconds, r.checkpoint.note.empty() ? "" : "; " + r.checkpoint.note);
  for (const auto& n : r.notes) fmt::print("  resumed with another {}\n", n);
}

void TrainPrinter::on_imported(const std::string& path, const ImportResult& r) {
  if (lead_)
    fmt::print("initialised from {} ({}, {}; {} read by rank 0 in {:.2f} s)\n", path, r.format, r.dtype,
               format_bytes(static_cast<double>(r.bytes_read)), r.seconds);
}

void TrainPrinter::on_start(const TrainJobStart& s) {
  if (!lead_) return;
  start_.emplace(s);
  std::vector<std::string> notes;
  for (const auto& n : s.preset.notes)
    notes.push_back(fmt::format("model {}: accepted, not applied: {}", o_.model, n));
  if (!s.config.unused_keys.empty())
    notes.push_back(
        fmt::format("config {}: accepted, unused by tierzero (they tune DeepSpeed's own machinery; "
                    "docs/deepspeed.md): {}",
                    o_.config_origin, fmt::join(s.config.unused_keys, ", ")));
  for (const auto& m : s.config.mapped_keys)
    notes.push_back(fmt::format("config {}: {}", o_.config_origin, m));
  print_run_header(stdout, {.model = s.preset.config,
                            .data = s.data.describe(),
                            .val_data = s.val_data ? s.val_data->describe() : "",
                            .unigram_entropy_nats = s.unigram_entropy_nats,
                            .topology = s.topology,
                            .run = s.run,
                            .engine = s.engine,
                            .compare = s.compare,
                            .compare_bytes_per_tier = s.compare_bytes_per_tier,
                            .notes = notes,
                            .peak = peak_});
  report_ =
      std::make_unique<StepReporter>(stdout, s.topology, s.run, s.engine, peak_, o_.metrics, o_.progress_bar);
}

void TrainPrinter::on_step(const TrainStep& step, double memory_bytes) {
  if (report_) report_->on_step(step, memory_bytes);
}

void TrainPrinter::on_eval(const EvalRecord& eval) {
  if (report_) report_->on_eval(eval);
}

void TrainPrinter::on_save(const SaveResult& s) {
  if (!lead_) return;
  fmt::print("saved {} ({} in {:.3f} s, {:.0f} MB/s){}\n", s.path, format_bytes(static_cast<double>(s.bytes)),
             s.seconds, s.seconds > 0 ? s.bytes / s.seconds / 1e6 : 0.0,
             s.removed.empty() ? "" : fmt::format("; removed {}", fmt::join(s.removed, ", ")));
  std::fflush(stdout);
}

void TrainPrinter::on_finish(const std::vector<TrainStep>& steps, int skipped_steps) {
  if (report_)
    report_->finish(steps, start_->unigram_entropy_nats, skipped_steps, start_->compare,
                    start_->compare_bytes_per_tier, o_.weights_out);
}

}  // namespace tz::cli
