#include "perf/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace tz::perf {
namespace {

struct Row {
  int p = 0;
  double x = 0;  // bytes one rank sends: ((p-1)/p) x size
  double t = 0;  // seconds
};

// The tier's rows of `op`, t = the tierzero column's `figure` (time_us, or cpu_us: rows without it,
// from a bench of before it was measured, are left out).
std::vector<Row> rows_of(const nlohmann::json& bench, const std::string& tier_name, const std::string& op,
                         const char* figure = "time_us") {
  if (!bench.contains("results") || !bench["results"].is_array())
    fail_input(
        "calibration: the bench document has no 'results' array (use tierzero bench comm --format json)");
  std::vector<Row> rows;
  for (const auto& row : bench["results"]) {
    if (row.value("group", "") != tier_name || row.value("op", "") != op) continue;
    const int p = row.at("group_size").get<int>();
    if (p < 2) continue;
    const nlohmann::json& ours = row.at("tierzero");
    if (!ours.contains(figure)) continue;
    const double t = ours.at(figure).get<double>() * 1e-6;
    if (!(t > 0)) fail_input("calibration: tier '{}': {} row with {} {} s", tier_name, op, figure, t);
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

// Weighted least squares of t = c + x s with weights 1/t^2 (the relative error, so that a 4 KiB row
// counts as much as a 4 MiB one); a negative intercept is clamped to 0 and the slope refitted through
// the origin.
struct Line {
  double intercept = 0, slope = 0;
  double sx = 0, sy = 0, w = 0;  // the weighted sums, for a refit given another slope
};
Line relative_line_fit(const std::vector<Row>& rows) {
  double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Row& r : rows) {
    const double wi = 1 / (r.t * r.t);
    w += wi, sx += wi * r.x, sy += wi * r.t, sxx += wi * r.x * r.x, sxy += wi * r.x * r.t;
  }
  Line l{.sx = sx, .sy = sy, .w = w};
  l.slope = (w * sxy - sx * sy) / (w * sxx - sx * sx);
  l.intercept = (sy - l.slope * sx) / w;
  if (!(l.intercept >= 0)) l.intercept = 0, l.slope = sxy / sxx;  // through the origin
  return l;
}

}  // namespace

LinkFit fit_tier_link(const nlohmann::json& bench, const std::string& tier_name) {
  const std::vector<Row> rows = rows_of(bench, tier_name, "all_gather");
  if (rows.size() < 2)
    fail_input("calibration: bench has {} all_gather rows for tier '{}' (need 2 sizes or more)", rows.size(),
               tier_name);
  const Line line = relative_line_fit(rows);
  double slope = line.slope, intercept = line.intercept;
  if (!(slope > 0)) {
    // Latency-bound over the measured sizes (per-call costs such as waiting for a descheduled peer
    // hide the bytes): the slope is the smallest the rows allow, the largest size moved in its whole
    // measured time (a lower bound on the bandwidth), and the latency the weighted fit given it.
    const Row& largest =
        *std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.x < b.x; });
    slope = largest.t / largest.x;
    intercept = std::max(0.0, (line.sy - slope * line.sx) / line.w);
  }
  const int p = rows.front().p;
  LinkFit f{.bandwidth_GBps = 1.0 / slope / 1e9,
            .latency_us = intercept / (p - 1) * 1e6,
            .points = int(rows.size())};
  f.rms_relative_error = rms_relative_error(rows, [&](const Row& r) { return intercept + slope * r.x; });
  return f;
}

ReduceFit fit_tier_reduce(const nlohmann::json& bench, const std::string& tier_name, const LinkFit& link) {
  const std::vector<Row> rows = rows_of(bench, tier_name, "reduce_scatter");
  if (rows.empty()) fail_input("calibration: bench has no reduce_scatter rows for tier '{}'", tier_name);
  TZ_CHECK(link.bandwidth_GBps > 0, "link of tier {}", tier_name);
  auto all_gather_s = [&](const Row& r) {
    return (r.p - 1) * link.latency_us * 1e-6 + r.x / (link.bandwidth_GBps * 1e9);
  };
  // Extra time e = t_RS - t_AG = x / rho, weighted least squares through the origin (weights 1/t^2).
  double sxx = 0, sxe = 0;
  for (const Row& r : rows) {
    const double wi = 1 / (r.t * r.t);
    sxx += wi * r.x * r.x, sxe += wi * r.x * (r.t - all_gather_s(r));
  }
  const double slope = sxe / sxx;  // seconds per byte of reduction; <= 0: no measurable reduction cost
  ReduceFit f{.reduce_GBps = slope > 0 ? 1.0 / slope / 1e9 : 0.0, .points = int(rows.size())};
  f.rms_relative_error =
      rms_relative_error(rows, [&](const Row& r) { return all_gather_s(r) + std::max(slope, 0.0) * r.x; });
  return f;
}

CpuFit fit_tier_cpu(const nlohmann::json& bench, const std::string& tier_name) {
  std::vector<Row> rows = rows_of(bench, tier_name, "all_gather", "cpu_us");
  for (const Row& r : rows_of(bench, tier_name, "reduce_scatter", "cpu_us")) rows.push_back(r);
  CpuFit f{.points = int(rows.size())};
  if (rows.size() < 2) return f;
  const Line line = relative_line_fit(rows);
  // A slope that is not positive (or only rounding's, next to the per-call part): the CPU per call does
  // not grow with the bytes over the measured sizes; the per-call figure is then the weighted mean.
  double largest_x = 0;
  for (const Row& r : rows) largest_x = std::max(largest_x, r.x);
  const bool grows = line.slope * largest_x > 1e-9 * (line.sy / line.w);
  const double slope = grows ? line.slope : 0.0;
  const double intercept = grows ? line.intercept : line.sy / line.w;
  f.call_us = intercept * 1e6;
  f.GBps = slope > 0 ? 1.0 / slope / 1e9 : 0.0;
  f.rms_relative_error = rms_relative_error(rows, [&](const Row& r) { return intercept + slope * r.x; });
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

nlohmann::json curves_from_bench(const Topology& base, const std::vector<nlohmann::json>& benches,
                                 const std::vector<std::string>& origins, bool with_native) {
  TZ_CHECK_EQ(benches.size(), origins.size());
  struct Key {
    std::string group, op, library;
    bool operator<(const Key& o) const {
      return std::tie(group, op, library) < std::tie(o.group, o.op, o.library);
    }
  };
  struct Acc {
    std::vector<double> sizes;
    std::string sizes_from;
    std::map<int, std::vector<std::vector<double>>> busbw;  // group size -> runs -> per size
    std::set<std::string> files;
  };
  std::map<Key, Acc> acc;
  std::vector<Key> order;
  for (std::size_t d = 0; d < benches.size(); ++d) {
    const nlohmann::json& doc = benches[d];
    if (!doc.contains("results") || !doc["results"].is_array())
      fail_input("calibration: {} has no 'results' array (use tierzero bench comm --format json)",
                 origins[d]);
    std::map<std::pair<Key, int>, std::pair<std::vector<double>, std::vector<double>>> runs;  // sizes, busbw
    for (const auto& row : doc["results"]) {
      if (row.value("algorithm", "flat") != "flat") continue;
      const std::string group = row.at("group").get<std::string>();
      const int p = row.at("group_size").get<int>();
      if (p < 2) continue;
      const std::string op = row.at("op").get<std::string>();
      const auto& ops = curve_op_names();
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) continue;  // broadcast: no curve
      const double size = row.at("size_bytes").get<double>();
      const double factor = op == "all_reduce" ? 2.0 * (p - 1) / p : double(p - 1) / p;
      for (const char* lib : {"tierzero", "native"}) {
        if (std::string(lib) == "native" && (!with_native || row["native"].is_null())) continue;
        const double t = row.at(lib).at("time_us").get<double>() * 1e-6;
        if (!(t > 0))
          fail_input("calibration: {}: {} {} row of {} bytes has time {} s", origins[d], group, op, size, t);
        const Key key{group, op, std::string(lib) == "native" ? "mpi" : "tierzero"};
        auto& r = runs[{key, p}];
        r.first.push_back(size);
        r.second.push_back(factor * size / t / 1e9);
      }
    }
    for (auto& [kp, r] : runs) {
      Acc& a = acc[kp.first];
      if (a.sizes.empty()) {
        a.sizes = r.first;
        a.sizes_from = origins[d];
        order.push_back(kp.first);
      } else if (a.sizes != r.first) {
        fail_input(
            "calibration: {} measured {} {} at other sizes than {} (run bench comm with the same sizes)",
            origins[d], kp.first.group, kp.first.op, a.sizes_from);
      }
      a.busbw[kp.second].push_back(r.second);
      a.files.insert(origins[d]);
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (const Key& key : order) {
    const Acc& a = acc.at(key);
    nlohmann::json tiers = nlohmann::json::array();
    if (key.group == "world") {
      for (const auto& t : base.tiers()) tiers.push_back(t.name);
    } else {
      base.tier_index(key.group);  // InputError naming the group if the base topology has no such tier
      tiers.push_back(key.group);
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [p, runs_of_p] : a.busbw) {
      std::vector<double> med;
      for (std::size_t i = 0; i < a.sizes.size(); ++i) {
        std::vector<double> v;
        for (const auto& run : runs_of_p) v.push_back(run[i]);
        std::sort(v.begin(), v.end());
        med.push_back(v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
      }
      rows.push_back({{"group_size", p}, {"busbw_GBps", med}});
    }
    std::string files;
    for (const auto& f : a.files) files += (files.empty() ? "" : ", ") + f;
    out.push_back(
        {{"tiers", tiers},
         {"op", key.op},
         {"library", key.library},
         {"source",
          fmt::format("measured by tierzero bench comm ({} column) in {}; median busbw per size over "
                      "repeated runs",
                      key.library == "mpi" ? "native" : "tierzero", files)},
         {"sizes_bytes", a.sizes},
         {"rows", rows}});
  }
  return out;
}

nlohmann::json calibrated_topology_json(const Topology& base, const nlohmann::json& bench,
                                        const std::string& origin, const DeviceCalibration& device,
                                        const std::vector<nlohmann::json>& extra_benches,
                                        const std::vector<std::string>& extra_origins) {
  nlohmann::json tiers = nlohmann::json::array();
  for (int t = 0; t < base.num_tiers(); ++t) {
    const Tier& tier = base.tier(t);
    nlohmann::json j = {{"name", tier.name}, {"fanout", tier.fanout}};
    if (t + 1 == base.num_tiers() && !base.resolved()) j["fanout"] = "auto";
    if (rows_of(bench, tier.name, "all_gather").empty()) {
      j["bandwidth_GBps"] = tier.bandwidth_GBps;
      j["latency_us"] = tier.latency_us;
      if (tier.reduce_GBps > 0) j["reduce_GBps"] = tier.reduce_GBps;
      j["source"] = fmt::format("not measured in {}; kept from {}: {}", origin, base.name(), tier.source);
      tiers.push_back(j);
      continue;
    }
    const LinkFit f = fit_tier_link(bench, tier.name);
    j["bandwidth_GBps"] = f.bandwidth_GBps;
    j["latency_us"] = f.latency_us;
    std::string source = fmt::format(
        "measured in {}: link = weighted least-squares fit of {} ring all-gather sizes (rms error {:.0f}%)",
        origin, f.points, 100 * f.rms_relative_error);
    if (!rows_of(bench, tier.name, "reduce_scatter").empty()) {
      const ReduceFit r = fit_tier_reduce(bench, tier.name, f);
      if (r.reduce_GBps > 0) j["reduce_GBps"] = r.reduce_GBps;
      source += fmt::format(
          "; reduce_GBps = fit of the extra time of {} ring reduce-scatter sizes over that link (rms error "
          "{:.0f}%){}",
          r.points, 100 * r.rms_relative_error,
          r.reduce_GBps > 0 ? "" : ": no slower than the all-gather, reductions free");
    }
    if (const CpuFit c = fit_tier_cpu(bench, tier.name); c.points >= 2 && (c.call_us > 0 || c.GBps > 0)) {
      if (c.call_us > 0) j["cpu_call_us"] = c.call_us;
      if (c.GBps > 0) j["cpu_GBps"] = c.GBps;
      source += fmt::format(
          "; cpu_call_us, cpu_GBps = fit of the CPU per call of {} all-gather and reduce-scatter sizes (rms "
          "error {:.0f}%)",
          c.points, 100 * c.rms_relative_error);
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
                        {"memory_bandwidth_GBps", d.memory_bandwidth_GBps}};
  if (const double q = device.quant_GBps > 0 ? device.quant_GBps : d.quant_GBps; q > 0) dev["quant_GBps"] = q;
  std::string source =
      device.tflops > 0
          ? fmt::format("peak_tflops: the measured model-step rate of one rank (price with fraction 1): {}",
                        device.source)
          : d.source;
  if (device.quant_GBps > 0) source += "; quant_GBps: the quantization kernels' rate measured by bench quant";
  dev["source"] = source;
  out["device"] = dev;
  std::vector<nlohmann::json> benches = {bench};
  std::vector<std::string> origins = {origin};
  benches.insert(benches.end(), extra_benches.begin(), extra_benches.end());
  origins.insert(origins.end(), extra_origins.begin(), extra_origins.end());
  const nlohmann::json measured = curves_from_bench(base, benches, origins);
  // The base topology's curves stay unless this calibration measured the same (tiers, op, library).
  nlohmann::json curves = nlohmann::json::array();
  const nlohmann::json base_doc = base.to_json();
  auto same = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["tiers"] == b["tiers"] && a["op"] == b["op"] && a["library"] == b["library"];
  };
  if (base_doc.contains("collective_curves"))
    for (const auto& c : base_doc["collective_curves"])
      if (std::none_of(measured.begin(), measured.end(), [&](const nlohmann::json& m) { return same(c, m); }))
        curves.push_back(c);
  for (const auto& m : measured) curves.push_back(m);
  if (!curves.empty()) out["collective_curves"] = curves;
  return out;
}

}  // namespace tz::perf
