// Calibration: a topology whose tier and device figures are measured on this machine, for the cost
// model (docs/cost_model.md, "Calibration on this machine"). Terms as in perf/collective_time.hpp:
// p ranks in the tier group, size S = one rank's full tensor (bench comm's size_bytes), block
// b = S/p, x = (p-1) b = ((p-1)/p) S the bytes one rank sends.
//   link     from the tier's `all_gather` rows of `tierzero bench comm --format json` (tierzero's
//            ring): t_AG = (p-1) alpha + x / beta. Weighted least squares on the relative error
//            (weights 1/t^2, so a 4 KiB row counts as much as a 4 MiB one: the step's collectives
//            span that range); a negative intercept is clamped to alpha = 0 and the slope refitted
//            through the origin. When the times do not grow with size (latency-bound over the
//            measured range), the bandwidth is its lower bound, the largest size's x over its time,
//            and the latency the weighted fit given that slope.
//   reduce   from the same tier's `reduce_scatter` rows, given that link: the ring reduce-scatter
//            moves the same bytes in the same steps and adds each received block into its partial
//            sum, t_RS = t_AG(x) + x / rho, so the extra time e = t_RS - t_AG(x) is fitted as x / rho
//            (same weights, through the origin). rho is written as the tier's reduce_GBps; when the
//            reduce-scatter is no slower than the all-gather, rho = 0 (reductions priced free).
//   cpu      from the same tier's all_gather and reduce_scatter rows' cpu_us (the CPU time a rank's
//            threads spent per call: copies, sums and polling): cpu = c + x / kappa, the same
//            weighted fit, written as the tier's cpu_call_us (c) and cpu_GBps (kappa); left out for a
//            bench without cpu_us. The cost model charges it to compute on a host whose cores the
//            ranks share.
//   device   peak_tflops = the model-step rate one rank achieves, from 1-rank runs of the real
//            step (model FLOPs / median step time) and the core-sharing model below (then price
//            with an achievable fraction of 1).
// Core sharing: k ranks on a host of C cores each run t = max(1, floor(C/k)) threads (tierzero
// train's default); when k > C they also time-share the cores. With R(t) the measured rate of a
// 1-rank step on t threads, one rank's rate is R(t) x min(1, C/k).
#pragma once

#include <nlohmann/json.hpp>  // complete: a default argument holds a vector of json

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace tz::perf {

struct LinkFit {
  double bandwidth_GBps = 0;
  double latency_us = 0;
  int points = 0;
  double rms_relative_error = 0;  // of the fitted times against the measured ones
};

struct ReduceFit {
  double reduce_GBps = 0;  // 0 = the reduce-scatter was no slower than the all-gather
  int points = 0;
  double rms_relative_error = 0;  // of the fitted reduce-scatter times against the measured ones
};

// Fits one tier's link from a bench document's all_gather rows; InputError naming the tier when it
// has fewer than two sizes.
LinkFit fit_tier_link(const nlohmann::json& bench, const std::string& tier_name);
// Fits one tier's reduction rate from its reduce_scatter rows given its link; InputError naming the
// tier when it has none.
ReduceFit fit_tier_reduce(const nlohmann::json& bench, const std::string& tier_name, const LinkFit& link);

struct CpuFit {
  double call_us = 0;  // host CPU per call
  double GBps = 0;     // bytes sent per second of host CPU; 0 = no per-byte cost measured
  int points = 0;      // rows with a CPU figure (fewer than 2: no fit, both 0)
  double rms_relative_error = 0;
};

// Fits one tier's CPU per collective call from a bench document's all_gather and reduce_scatter rows.
CpuFit fit_tier_cpu(const nlohmann::json& bench, const std::string& tier_name);

// Measured model-step rates of one rank alone on the host: tflops_by_threads[t - 1] with t threads.
struct HostCompute {
  int cores = 1;
  std::vector<double> tflops_by_threads;
};
// One rank's rate when `local_ranks` ranks share the host (the core-sharing model above);
// InputError when the thread count it needs was not measured.
double shared_rank_tflops(const HostCompute& host, int local_ranks);

struct DeviceCalibration {
  double tflops = 0;      // per-rank model-step rate; 0 = keep the base topology's device figure
  std::string source;     // how it was measured
  double quant_GBps = 0;  // the quantization kernels' rate here (bench quant); 0 = keep the base's
};

// Measured curves (topology/collective_curve.hpp) from one or more `bench comm --format json`
// documents (`origins` name them): one curve per (group, op) of the flat rows, library "tierzero"
// (and "mpi" from the native column when `with_native`), one row per group size; rows of the same
// group size in several documents (repeated runs) take the median busbw per size. busbw is
// recomputed from the rows' time_us and size_bytes (nccl-tests factor), the group's tier set from
// its name (a tier, or "world" = every tier; "world-hier" rows are skipped). InputError when two
// documents measured a curve at different sizes.
nlohmann::json curves_from_bench(const Topology& base, const std::vector<nlohmann::json>& benches,
                                 const std::vector<std::string>& origins, bool with_native = false);

// `base` with every tier the bench measured refitted (link, and reduction rate where the bench has
// reduce-scatter rows; tiers it did not measure unchanged, and said so in their source), the device
// rate from `device` when given, and the bench's measured curves (curves_from_bench of `bench` and
// `extra_benches`). `origin` names the bench file. Returns the topology document.
nlohmann::json calibrated_topology_json(const Topology& base, const nlohmann::json& bench,
                                        const std::string& origin, const DeviceCalibration& device,
                                        const std::vector<nlohmann::json>& extra_benches = {},
                                        const std::vector<std::string>& extra_origins = {});

}  // namespace tz::perf
