#include "perf/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tz::perf {
namespace {

struct Row {
  int p = 0;
  double x = 0;  // bytes one rank sends: ((p-1)/p) x size
  double t = 0;  // seconds
};

std::vector<Row> rows_of(const nlohmann::json& bench, const std::string& tier_name, const std::string& op) {
  if (!bench.contains("results") || !bench["results"].is_array())
    fail_input(
        "calibration: the bench document has no 'results' array (use tierzero bench comm --format json)");
  std::vector<Row> rows;
  for (const auto& row : bench["results"]) {
    if (row.value("group", "") != tier_name || row.value("op", "") != op) continue;
    const int p = row.at("group_size").get<int>();
    if (p < 2) continue;
    const double t = row.at("tierzero").at("time_us").get<double>() * 1e-6;
    if (!(t > 0)) fail_input("calibration: tier '{}': {} row with time {} s", tier_name, op, t);
    rows.push_back({p, double(p - 1) / p * row.at("size_bytes").get<double>(), t});
  }
  for (const Row& r : rows)
    if (r.p != rows.front().p)
      fail_input("calibration: tier '{}': {} rows for group sizes {} and {} (one bench run per file)",
                 tier_name, op, rows.front().p, r.p);
  return rows;
}

double rms_relative_error(const std::vector<Row>& rows, const auto& model) {
  double s = 0;
  for (const Row& r : rows) s += std::pow((model(r) - r.t) / r.t, 2);
  return std::sqrt(s / double(rows.size()));
}

}  // namespace

LinkFit fit_tier_link(const nlohmann::json& bench, const std::string& tier_name) {
  const std::vector<Row> rows = rows_of(bench, tier_name, "all_gather");
  if (rows.size() < 2)
    fail_input("calibration: bench has {} all_gather rows for tier '{}' (need 2 sizes or more)", rows.size(),
               tier_name);
  // Weighted least squares of t = c + x s with weights 1/t^2 (relative error).
  double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Row& r : rows) {
    const double wi = 1 / (r.t * r.t);
    w += wi, sx += wi * r.x, sy += wi * r.t, sxx += wi * r.x * r.x, sxy += wi * r.x * r.t;
  }
  double slope = (w * sxy - sx * sy) / (w * sxx - sx * sx);
  double intercept = (sy - slope * sx) / w;
  if (!(intercept >= 0)) intercept = 0, slope = sxy / sxx;  // latency clamped at 0: through the origin
  if (!(slope > 0))
    fail_input("calibration: tier '{}': all-gather time does not grow with size (slope {})", tier_name,
               slope);
  const int p = rows.front().p;
  LinkFit f{.bandwidth_gbps = 1.0 / slope / 1e9,
            .latency_us = intercept / (p - 1) * 1e6,
            .points = int(rows.size())};
  f.rms_relative_error = rms_relative_error(rows, [&](const Row& r) { return intercept + slope * r.x; });
  return f;
}

ReduceFit fit_tier_reduce(const nlohmann::json& bench, const std::string& tier_name, const LinkFit& link) {
  const std::vector<Row> rows = rows_of(bench, tier_name, "reduce_scatter");
  if (rows.empty()) fail_input("calibration: bench has no reduce_scatter rows for tier '{}'", tier_name);
  TZ_CHECK(link.bandwidth_gbps > 0, "link of tier {}", tier_name);
  auto all_gather_s = [&](const Row& r) {
    return (r.p - 1) * link.latency_us * 1e-6 + r.x / (link.bandwidth_gbps * 1e9);
  };
  // Extra time e = t_RS - t_AG = x / rho, weighted least squares through the origin (weights 1/t^2).
  double sxx = 0, sxe = 0;
  for (const Row& r : rows) {
    const double wi = 1 / (r.t * r.t);
    sxx += wi * r.x * r.x, sxe += wi * r.x * (r.t - all_gather_s(r));
  }
  const double slope = sxe / sxx;  // seconds per byte of reduction; <= 0: no measurable reduction cost
  ReduceFit f{.reduce_gbps = slope > 0 ? 1.0 / slope / 1e9 : 0.0, .points = int(rows.size())};
  f.rms_relative_error =
      rms_relative_error(rows, [&](const Row& r) { return all_gather_s(r) + std::max(slope, 0.0) * r.x; });
  return f;
}

double shared_rank_tflops(const HostCompute& host, int local_ranks) {
  if (host.cores < 1 || local_ranks < 1)
    fail_input("calibration: need cores >= 1 and local ranks >= 1 (got {} and {})", host.cores, local_ranks);
  const int threads = std::max(1, host.cores / local_ranks);
  if (threads > int(host.tflops_by_threads.size()) || !(host.tflops_by_threads[threads - 1] > 0))
    fail_input(
        "calibration: {} ranks on {} cores run {} threads each, but the 1-rank rate with {} threads was "
        "not measured ({} rates given)",
        local_ranks, host.cores, threads, threads, host.tflops_by_threads.size());
  return host.tflops_by_threads[threads - 1] * std::min(1.0, double(host.cores) / local_ranks);
}

nlohmann::json calibrated_topology_json(const Topology& base, const nlohmann::json& bench,
                                        const std::string& origin, const DeviceCalibration& device) {
  nlohmann::json tiers = nlohmann::json::array();
  for (int t = 0; t < base.num_tiers(); ++t) {
    const Tier& tier = base.tier(t);
    nlohmann::json j = {{"name", tier.name}, {"fanout", tier.fanout}};
    if (t + 1 == base.num_tiers() && !base.resolved()) j["fanout"] = "auto";
    if (rows_of(bench, tier.name, "all_gather").empty()) {
      j["bandwidth_gbps"] = tier.bandwidth_gbps;
      j["latency_us"] = tier.latency_us;
      if (tier.reduce_gbps > 0) j["reduce_gbps"] = tier.reduce_gbps;
      j["source"] = fmt::format("not measured in {}; kept from {}: {}", origin, base.name(), tier.source);
      tiers.push_back(j);
      continue;
    }
    const LinkFit f = fit_tier_link(bench, tier.name);
    j["bandwidth_gbps"] = f.bandwidth_gbps;
    j["latency_us"] = f.latency_us;
    std::string source = fmt::format(
        "measured in {}: link = weighted least-squares fit of {} ring all-gather sizes (rms error {:.0f}%)",
        origin, f.points, 100 * f.rms_relative_error);
    if (!rows_of(bench, tier.name, "reduce_scatter").empty()) {
      const ReduceFit r = fit_tier_reduce(bench, tier.name, f);
      if (r.reduce_gbps > 0) j["reduce_gbps"] = r.reduce_gbps;
      source += fmt::format(
          "; reduce_gbps = fit of the extra time of {} ring reduce-scatter sizes over that link (rms error "
          "{:.0f}%){}",
          r.points, 100 * r.rms_relative_error,
          r.reduce_gbps > 0 ? "" : ": no slower than the all-gather, reductions free");
    }
    j["source"] = source;
    tiers.push_back(j);
  }
  nlohmann::json out = {
      {"name", base.name() + "-calibrated"},
      {"description", fmt::format("{} with tier figures measured by tierzero bench comm", base.name())},
      {"tiers", tiers}};
  if (base.host_tier() >= 0) out["host_tier"] = base.tier(base.host_tier()).name;
  const DeviceSpec& d = base.device();
  nlohmann::json dev = {{"name", d.name.empty() ? std::string("this host") : d.name},
                        {"peak_tflops", device.tflops > 0 ? device.tflops : d.peak_tflops},
                        {"memory_gib", d.memory_gib},
                        {"memory_bandwidth_gbps", d.memory_bandwidth_gbps}};
  dev["source"] =
      device.tflops > 0
          ? fmt::format("peak_tflops: the measured model-step rate of one rank (price with fraction 1): {}",
                        device.source)
          : d.source;
  out["device"] = dev;
  return out;
}

}  // namespace tz::perf
