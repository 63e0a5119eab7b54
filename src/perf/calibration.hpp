// Calibration: a topology whose tier figures are measured on this machine, for the cost model.
// Per tier t, from `tierzero bench comm --format json` rows of group t, op all_gather (tierzero's
// ring): time = (p-1) * alpha + ((p-1)/p) * size / beta is fitted by least squares over the sizes
// (x = (p-1)/p * size, y = time: slope 1/beta, intercept (p-1) alpha, clamped at 0), so that the
// closed form of perf/collective_time.hpp reproduces the measurement. The device's peak_tflops
// becomes the measured model-step rate (then use an achievable fraction of 1), when given.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "topology/topology.hpp"

namespace tz::perf {

struct LinkFit {
  double bandwidth_gbps = 0;
  double latency_us = 0;
  int points = 0;
};

// Fits one tier from a bench document; InputError naming the tier when the document has no rows.
LinkFit fit_tier_link(const nlohmann::json& bench, const std::string& tier_name);

// `base` with every tier the bench measured refitted (others unchanged, and said so in their
// source), device peak_tflops = measured_tflops when > 0. Returns the topology document (JSON).
nlohmann::json calibrated_topology_json(const Topology& base, const nlohmann::json& bench,
                                        double measured_tflops, const std::string& origin);

}  // namespace tz::perf
