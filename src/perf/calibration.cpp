#include "perf/calibration.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tz::perf {

LinkFit fit_tier_link(const nlohmann::json& bench, const std::string& tier_name) {
  if (!bench.contains("results") || !bench["results"].is_array())
    fail_input(
        "calibration: the bench document has no 'results' array (use tierzero bench comm --format json)");
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0, p = 0;
  for (const auto& row : bench["results"]) {
    if (row.value("group", "") != tier_name || row.value("op", "") != "all_gather") continue;
    p = row.at("group_size").get<int>();
    if (p < 2) continue;
    const double x = double(p - 1) / p * row.at("size_bytes").get<double>();
    const double y = row.at("tierzero").at("time_us").get<double>() * 1e-6;
    sx += x, sy += y, sxx += x * x, sxy += x * y, ++n;
  }
  if (n < 2)
    fail_input("calibration: bench has {} all_gather rows for tier '{}' (need 2 sizes or more)", n,
               tier_name);
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / n;
  if (!(slope > 0))
    fail_input("calibration: tier '{}': time does not grow with size (slope {})", tier_name, slope);
  return LinkFit{.bandwidth_gbps = 1.0 / slope / 1e9,
                 .latency_us = std::max(0.0, intercept / (p - 1)) * 1e6,
                 .points = n};
}

nlohmann::json calibrated_topology_json(const Topology& base, const nlohmann::json& bench,
                                        double measured_tflops, const std::string& origin) {
  nlohmann::json tiers = nlohmann::json::array();
  for (int t = 0; t < base.num_tiers(); ++t) {
    const Tier& tier = base.tier(t);
    nlohmann::json j = {{"name", tier.name}, {"fanout", tier.fanout}};
    if (t + 1 == base.num_tiers() && !base.resolved()) j["fanout"] = "auto";
    try {
      const LinkFit f = fit_tier_link(bench, tier.name);
      j["bandwidth_gbps"] = f.bandwidth_gbps;
      j["latency_us"] = f.latency_us;
      j["source"] =
          fmt::format("measured: least-squares fit of {} ring all-gather sizes from {}", f.points, origin);
    } catch (const InputError&) {
      j["bandwidth_gbps"] = tier.bandwidth_gbps;
      j["latency_us"] = tier.latency_us;
      j["source"] = fmt::format("not measured in {}; kept from {}: {}", origin, base.name(), tier.source);
    }
    tiers.push_back(j);
  }
  nlohmann::json out = {
      {"name", base.name() + "-calibrated"},
      {"description", fmt::format("{} with tier figures measured by tierzero bench comm", base.name())},
      {"tiers", tiers}};
  if (base.host_tier() >= 0) out["host_tier"] = base.tier(base.host_tier()).name;
  const DeviceSpec& d = base.device();
  nlohmann::json dev = {{"name", d.name},
                        {"peak_tflops", measured_tflops > 0 ? measured_tflops : d.peak_tflops},
                        {"memory_gib", d.memory_gib},
                        {"memory_bandwidth_gbps", d.memory_bandwidth_gbps}};
  dev["source"] = measured_tflops > 0
                      ? "peak_tflops: the measured model-step rate (use an achievable fraction of 1)"
                      : d.source;
  out["device"] = dev;
  return out;
}

}  // namespace tz::perf
