// Calibration recovers the link figures the closed form was generated with, and writes a topology
// the loader reads back.
#include "perf/calibration.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "perf/collective_time.hpp"

namespace tz::perf {
namespace {

nlohmann::json synthetic_bench(const Topology& topo, const std::vector<LinkParams>& links) {
  nlohmann::json rows = nlohmann::json::array();
  for (int t = 0; t < topo.num_tiers(); ++t) {
    const int p = topo.tier(t).fanout;
    for (double size = 1 << 10; size <= (1 << 24); size *= 4) {
      const double s = collective_time_s(CollectiveKind::all_gather, size, p, links[t]);
      rows.push_back({{"group", topo.tier(t).name},
                      {"group_size", p},
                      {"op", "all_gather"},
                      {"size_bytes", size},
                      {"tierzero", {{"time_us", s * 1e6}}}});
      rows.push_back({{"group", topo.tier(t).name},
                      {"group_size", p},
                      {"op", "reduce_scatter"},
                      {"size_bytes", size},
                      {"tierzero", {{"time_us", 1e6}}}});  // ignored: only all-gathers are fitted
    }
  }
  return {{"results", rows}};
}

TEST(Calibration, RecoversLinkFiguresAndWritesALoadableTopology) {
  const Topology mini = Topology::load("frontier-mini");
  const std::vector<LinkParams> links = {{.bandwidth_gbps = 7.5, .latency_us = 30},
                                         {.bandwidth_gbps = 3.25, .latency_us = 55},
                                         {.bandwidth_gbps = 1.5, .latency_us = 80}};
  const nlohmann::json bench = synthetic_bench(mini, links);
  for (int t = 0; t < 3; ++t) {
    const LinkFit f = fit_tier_link(bench, mini.tier(t).name);
    EXPECT_NEAR(f.bandwidth_gbps, links[t].bandwidth_gbps, 1e-6 * links[t].bandwidth_gbps);
    EXPECT_NEAR(f.latency_us, links[t].latency_us, 1e-6 * links[t].latency_us);
  }
  const nlohmann::json doc = calibrated_topology_json(mini, bench, 0.19, "bench.json");
  const Topology cal = Topology::from_json(doc, "calibrated");
  EXPECT_NEAR(cal.tier(2).bandwidth_gbps, 1.5, 1e-6);
  EXPECT_DOUBLE_EQ(cal.device().peak_tflops, 0.19);
  EXPECT_EQ(cal.world_size(), 8);
  try {
    fit_tier_link(bench, "nosuchtier");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchtier"), std::string::npos);
  }
}

}  // namespace
}  // namespace tz::perf
