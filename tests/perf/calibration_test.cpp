// Calibration recovers the link and reduction figures the closed forms were generated with, writes a
// topology the loader reads back (with reduce_gbps, which the cost model's closed form then uses),
// and shares a host's measured compute rate among its ranks as documented.
#include "perf/calibration.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "perf/collective_time.hpp"
#include "support/expect_input_error.hpp"

namespace tz::perf {
namespace {

nlohmann::json row(const std::string& group, int p, const char* op, double size, double seconds) {
  return {{"group", group},
          {"group_size", p},
          {"op", op},
          {"size_bytes", size},
          {"tierzero", {{"time_us", seconds * 1e6}}}};
}

// Rows from the closed forms: all-gather on each tier's link, reduce-scatter with its reduction rate.
nlohmann::json synthetic_bench(const Topology& topo, const std::vector<LinkParams>& links) {
  nlohmann::json rows = nlohmann::json::array();
  for (int t = 0; t < topo.num_tiers(); ++t) {
    const int p = topo.tier(t).fanout;
    for (double size = 1 << 10; size <= (1 << 24); size *= 4) {
      rows.push_back(row(topo.tier(t).name, p, "all_gather", size,
                         collective_time_s(CollectiveKind::all_gather, size, p, links[t])));
      rows.push_back(row(topo.tier(t).name, p, "reduce_scatter", size,
                         collective_time_s(CollectiveKind::reduce_scatter, size, p, links[t])));
      rows.push_back(row(topo.tier(t).name, p, "all_reduce", size, 1.0));  // ignored: not fitted
    }
  }
  return {{"results", rows}};
}

TEST(Calibration, RecoversLinkAndReductionFiguresAndWritesALoadableTopology) {
  const Topology mini = Topology::load("frontier-mini");
  const std::vector<LinkParams> links = {{.bandwidth_gbps = 7.5, .latency_us = 30, .reduce_gbps = 2.5},
                                         {.bandwidth_gbps = 3.25, .latency_us = 55, .reduce_gbps = 0.8},
                                         {.bandwidth_gbps = 1.5, .latency_us = 0, .reduce_gbps = 11}};
  const nlohmann::json bench = synthetic_bench(mini, links);
  for (int t = 0; t < 3; ++t) {
    const LinkFit f = fit_tier_link(bench, mini.tier(t).name);
    EXPECT_NEAR(f.bandwidth_gbps, links[t].bandwidth_gbps, 1e-6 * links[t].bandwidth_gbps) << "tier " << t;
    EXPECT_NEAR(f.latency_us, links[t].latency_us, 1e-6 * (1 + links[t].latency_us)) << "tier " << t;
    EXPECT_EQ(f.points, 8);
    EXPECT_LT(f.rms_relative_error, 1e-9);
    const ReduceFit r = fit_tier_reduce(bench, mini.tier(t).name, f);
    EXPECT_NEAR(r.reduce_gbps, links[t].reduce_gbps, 1e-6 * links[t].reduce_gbps) << "tier " << t;
    EXPECT_LT(r.rms_relative_error, 1e-9);
  }
  const nlohmann::json doc =
      calibrated_topology_json(mini, bench, "bench.json", {.tflops = 0.19, .source = "test"});
  const Topology cal = Topology::from_json(doc, "calibrated");
  EXPECT_NEAR(cal.tier(2).bandwidth_gbps, 1.5, 1e-6);
  EXPECT_NEAR(cal.tier(1).reduce_gbps, 0.8, 1e-6);
  EXPECT_DOUBLE_EQ(cal.device().peak_tflops, 0.19);
  EXPECT_EQ(cal.world_size(), 8);
  // The cost model's closed form reads the tier's reduction rate.
  const double n = 3 << 20;
  EXPECT_NEAR(collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(cal.tier(1))),
              collective_time_s(CollectiveKind::reduce_scatter, n, 4, links[1]), 1e-9);
  EXPECT_GT(collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(cal.tier(1))),
            collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(mini.tier(1))));
  // ... and the topology writes it back.
  EXPECT_NEAR(cal.to_json()["tiers"][1]["reduce_gbps"].get<double>(), 0.8, 1e-6);

  test::expect_input_error([&] { fit_tier_link(bench, "nosuchtier"); }, {"nosuchtier"});
  test::expect_input_error([&] { fit_tier_reduce(bench, "nosuchtier", LinkFit{.bandwidth_gbps = 1}); },
                           {"nosuchtier"});
}

TEST(Calibration, ReduceScatterNoSlowerThanAllGatherMeansFreeReductions) {
  nlohmann::json rows = nlohmann::json::array();
  const LinkParams link{.bandwidth_gbps = 4, .latency_us = 10};
  for (double size = 4096; size <= (1 << 20); size *= 4)
    for (auto [op, factor] : {std::pair{"all_gather", 1.0}, {"reduce_scatter", 0.97}})  // RS 3% faster
      rows.push_back(
          row("world", 2, op, size, factor * collective_time_s(CollectiveKind::all_gather, size, 2, link)));
  const nlohmann::json bench = {{"results", rows}};
  const LinkFit f = fit_tier_link(bench, "world");
  EXPECT_DOUBLE_EQ(fit_tier_reduce(bench, "world", f).reduce_gbps, 0.0);
  const Topology flat = Topology::load("flat");
  const nlohmann::json doc = calibrated_topology_json(flat, bench, "b.json", {});
  EXPECT_FALSE(doc["tiers"][0].contains("reduce_gbps"));
  EXPECT_EQ(doc["tiers"][0]["fanout"], "auto");
  EXPECT_NE(doc["tiers"][0]["source"].get<std::string>().find("reductions free"), std::string::npos);
}

TEST(Calibration, NegativeInterceptIsClampedToZeroLatency) {
  // Times that grow faster than linearly at small sizes would give a negative intercept.
  nlohmann::json rows = nlohmann::json::array();
  for (auto [size, us] : {std::pair{1e4, 1.0}, {1e5, 30.0}, {1e6, 300.0}})
    rows.push_back(row("world", 2, "all_gather", size, us * 1e-6));
  const LinkFit f = fit_tier_link({{"results", rows}}, "world");
  EXPECT_EQ(f.latency_us, 0.0);
  EXPECT_GT(f.bandwidth_gbps, 0.0);
  EXPECT_GT(f.rms_relative_error, 0.1);  // a bad fit says so
}

TEST(Calibration, RowsOfTwoGroupSizesAreRejected) {
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back(row("world", 2, "all_gather", 1e4, 1e-5));
  rows.push_back(row("world", 4, "all_gather", 1e5, 1e-4));
  test::expect_input_error([&] { fit_tier_link({{"results", rows}}, "world"); }, {"group sizes 2 and 4"});
}

TEST(Calibration, CoreSharingModel) {
  const HostCompute host{.cores = 2, .tflops_by_threads = {0.04, 0.07}};
  EXPECT_DOUBLE_EQ(shared_rank_tflops(host, 1), 0.07);  // one rank, both cores
  EXPECT_DOUBLE_EQ(shared_rank_tflops(host, 2), 0.04);  // one core each
  EXPECT_DOUBLE_EQ(shared_rank_tflops(host, 3), 0.04 * 2 / 3);
  EXPECT_DOUBLE_EQ(shared_rank_tflops(host, 4), 0.02);  // two ranks per core
  EXPECT_DOUBLE_EQ(shared_rank_tflops(host, 8), 0.01);
  const HostCompute big{.cores = 8, .tflops_by_threads = {0.04, 0.07}};
  EXPECT_DOUBLE_EQ(shared_rank_tflops(big, 4), 0.07);  // 2 threads each
  test::expect_input_error([&] { shared_rank_tflops(big, 2); }, {"4 threads"});
  test::expect_input_error([&] { shared_rank_tflops(host, 0); }, {"local ranks"});
}

TEST(Calibration, TopologyRejectsANegativeReductionRate) {
  nlohmann::json doc = Topology::load("flat").to_json();
  doc["tiers"][0]["reduce_gbps"] = -1;
  test::expect_input_error([&] { Topology::from_json(doc, "t.json"); }, {"reduce_gbps"});
}

}  // namespace
}  // namespace tz::perf
