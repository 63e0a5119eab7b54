// Calibration recovers the link and reduction figures the closed forms were generated with, writes a
// topology the loader reads back (with reduce_GBps, which the cost model's closed form then uses),
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
  const std::vector<LinkParams> links = {{.bandwidth_GBps = 7.5, .latency_us = 30, .reduce_GBps = 2.5},
                                         {.bandwidth_GBps = 3.25, .latency_us = 55, .reduce_GBps = 0.8},
                                         {.bandwidth_GBps = 1.5, .latency_us = 0, .reduce_GBps = 11}};
  const nlohmann::json bench = synthetic_bench(mini, links);
  for (int t = 0; t < 3; ++t) {
    const LinkFit f = fit_tier_link(bench, mini.tier(t).name);
    EXPECT_NEAR(f.bandwidth_GBps, links[t].bandwidth_GBps, 1e-6 * links[t].bandwidth_GBps) << "tier " << t;
    EXPECT_NEAR(f.latency_us, links[t].latency_us, 1e-6 * (1 + links[t].latency_us)) << "tier " << t;
    EXPECT_EQ(f.points, 8);
    EXPECT_LT(f.rms_relative_error, 1e-9);
    const ReduceFit r = fit_tier_reduce(bench, mini.tier(t).name, f);
    EXPECT_NEAR(r.reduce_GBps, links[t].reduce_GBps, 1e-6 * links[t].reduce_GBps) << "tier " << t;
    EXPECT_LT(r.rms_relative_error, 1e-9);
  }
  const nlohmann::json doc =
      calibrated_topology_json(mini, bench, "bench.json", {.tflops = 0.19, .source = "test"});
  const Topology cal = Topology::from_json(doc, "calibrated");
  EXPECT_NEAR(cal.tier(2).bandwidth_GBps, 1.5, 1e-6);
  EXPECT_NEAR(cal.tier(1).reduce_GBps, 0.8, 1e-6);
  EXPECT_DOUBLE_EQ(cal.device().peak_tflops, 0.19);
  EXPECT_EQ(cal.world_size(), 8);
  // The cost model's closed form reads the tier's reduction rate.
  const double n = 3 << 20;
  EXPECT_NEAR(collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(cal.tier(1))),
              collective_time_s(CollectiveKind::reduce_scatter, n, 4, links[1]), 1e-9);
  EXPECT_GT(collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(cal.tier(1))),
            collective_time_s(CollectiveKind::reduce_scatter, n, 4, link_of(mini.tier(1))));
  // ... and the topology writes it back.
  EXPECT_NEAR(cal.to_json()["tiers"][1]["reduce_GBps"].get<double>(), 0.8, 1e-6);

  test::expect_input_error([&] { fit_tier_link(bench, "nosuchtier"); }, {"nosuchtier"});
  test::expect_input_error([&] { fit_tier_reduce(bench, "nosuchtier", LinkFit{.bandwidth_GBps = 1}); },
                           {"nosuchtier"});
}

TEST(Calibration, ReduceScatterNoSlowerThanAllGatherMeansFreeReductions) {
  nlohmann::json rows = nlohmann::json::array();
  const LinkParams link{.bandwidth_GBps = 4, .latency_us = 10};
  for (double size = 4096; size <= (1 << 20); size *= 4)
    for (auto [op, factor] : {std::pair{"all_gather", 1.0}, {"reduce_scatter", 0.97}})  // RS 3% faster
      rows.push_back(
          row("world", 2, op, size, factor * collective_time_s(CollectiveKind::all_gather, size, 2, link)));
  const nlohmann::json bench = {{"results", rows}};
  const LinkFit f = fit_tier_link(bench, "world");
  EXPECT_DOUBLE_EQ(fit_tier_reduce(bench, "world", f).reduce_GBps, 0.0);
  const Topology flat = Topology::load("flat");
  const nlohmann::json doc = calibrated_topology_json(flat, bench, "b.json", {});
  EXPECT_FALSE(doc["tiers"][0].contains("reduce_GBps"));
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
  EXPECT_GT(f.bandwidth_GBps, 0.0);
  EXPECT_GT(f.rms_relative_error, 0.1);  // a bad fit says so
}

TEST(Calibration, TimesThatDoNotGrowWithSizeFitALatencyBoundLink) {
  // A tier whose per-call cost hides the bytes (ranks waiting for descheduled peers): about 20 ms at every
  // size, a little less at the largest.
  nlohmann::json rows = nlohmann::json::array();
  for (auto [size, ms] : {std::pair{1024.0, 21.0}, {65536.0, 20.0}, {1048576.0, 19.0}})
    rows.push_back(row("gcd", 2, "all_gather", size, ms * 1e-3));
  const LinkFit f = fit_tier_link({{"results", rows}}, "gcd");
  // Bandwidth: the largest size's bytes per rank (512 KiB) in its 19 ms, the lowest the rows allow.
  EXPECT_NEAR(f.bandwidth_GBps, 524288 / 19e-3 / 1e9, 1e-12);
  // Latency: the weighted mean of what that bandwidth leaves, below the measured times.
  EXPECT_GT(f.latency_us, 5e3);
  EXPECT_LT(f.latency_us, 20e3);
  EXPECT_EQ(f.points, 3);
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
  doc["tiers"][0]["reduce_GBps"] = -1;
  test::expect_input_error([&] { Topology::from_json(doc, "t.json"); }, {"reduce_GBps"});
}

// The CPU per call: cpu = c + x / kappa over the all-gather and reduce-scatter rows together (x the
// bytes a rank sends), recovered exactly from rows made by that law, written into the tier and read
// back; a bench without cpu_us leaves the tier without CPU figures.
TEST(Calibration, FitsTheCpuPerCallAndWritesIt) {
  const Topology mini = Topology::load("frontier-mini");
  const std::vector<LinkParams> links = {{.bandwidth_GBps = 7.5, .latency_us = 30, .reduce_GBps = 2.5},
                                         {.bandwidth_GBps = 3.25, .latency_us = 55, .reduce_GBps = 0.8},
                                         {.bandwidth_GBps = 1.5, .latency_us = 0, .reduce_GBps = 11}};
  const double call_us[] = {35, 0, 60}, cpu_GBps[] = {6, 4.5, 0};  // tier 2: no per-byte cost
  nlohmann::json bench = synthetic_bench(mini, links);
  const nlohmann::json without_cpu = bench;
  for (auto& r : bench["results"]) {
    const int t = mini.tier_index(r["group"].get<std::string>());
    const int p = r["group_size"].get<int>();
    const double x = double(p - 1) / p * r["size_bytes"].get<double>();
    r["tierzero"]["cpu_us"] = call_us[t] + (cpu_GBps[t] > 0 ? x / (cpu_GBps[t] * 1e9) * 1e6 : 0.0);
  }
  for (int t = 0; t < 3; ++t) {
    const CpuFit f = fit_tier_cpu(bench, mini.tier(t).name);
    EXPECT_EQ(f.points, 16) << "tier " << t;  // 8 sizes of each of the two ops
    EXPECT_NEAR(f.call_us, call_us[t], 1e-6 * (1 + call_us[t])) << "tier " << t;
    EXPECT_NEAR(f.GBps, cpu_GBps[t], 1e-6 * (1 + cpu_GBps[t])) << "tier " << t;
    EXPECT_LT(f.rms_relative_error, 1e-9) << "tier " << t;
    EXPECT_EQ(fit_tier_cpu(without_cpu, mini.tier(t).name).points, 0);
  }
  const Topology cal =
      Topology::from_json(calibrated_topology_json(mini, bench, "bench.json",
                                                   {.tflops = 0.19, .source = "test", .quant_GBps = 21}),
                          "calibrated");
  EXPECT_NEAR(cal.tier(0).cpu_call_us, 35, 1e-6);
  EXPECT_NEAR(cal.tier(0).cpu_GBps, 6, 1e-6);
  EXPECT_NEAR(cal.tier(1).cpu_call_us, 0, 1e-6);
  EXPECT_NEAR(cal.tier(1).cpu_GBps, 4.5, 1e-6);
  EXPECT_NEAR(cal.tier(2).cpu_call_us, 60, 1e-6);
  EXPECT_EQ(cal.tier(2).cpu_GBps, 0);
  EXPECT_DOUBLE_EQ(cal.device().quant_GBps, 21);
  EXPECT_NEAR(cal.to_json()["tiers"][0]["cpu_GBps"].get<double>(), 6, 1e-6);
  const Topology plain =
      Topology::from_json(calibrated_topology_json(mini, without_cpu, "bench.json", {}), "calibrated");
  for (int t = 0; t < 3; ++t)
    EXPECT_EQ(plain.tier(t).cpu_call_us + plain.tier(t).cpu_GBps, 0) << "tier " << t;
  EXPECT_EQ(plain.device().quant_GBps, mini.device().quant_GBps);
}

TEST(Calibration, TopologyRejectsNegativeCpuFigures) {
  for (const char* key : {"cpu_call_us", "cpu_GBps"}) {
    nlohmann::json doc = Topology::load("flat").to_json();
    doc["tiers"][0][key] = -1;
    test::expect_input_error([&] { Topology::from_json(doc, "t.json"); }, {key, "-1"});
  }
  nlohmann::json doc = Topology::load("flat").to_json();
  doc["tiers"][0]["cpu_gbps"] = 3;
  test::expect_input_error([&] { Topology::from_json(doc, "t.json"); }, {"cpu_gbps"});
}

}  // namespace
}  // namespace tz::perf

namespace tz::perf {
namespace {

// A bench comm document whose rows take the times a given busbw table implies (one world size).
nlohmann::json bench_from_table(int p, const std::vector<double>& sizes, const std::vector<double>& ag_busbw,
                                const std::vector<double>& rs_busbw, double noise = 1.0) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < sizes.size(); ++i)
    for (auto [op, bw] : {std::pair{"all_gather", ag_busbw[i]}, {"reduce_scatter", rs_busbw[i]}}) {
      const double t = double(p - 1) / p * sizes[i] / (bw * noise * 1e9);
      nlohmann::json r = row("world", p, op, sizes[i], t);
      r["algorithm"] = "flat";
      r["native"] = {{"time_us", 2 * t * 1e6}};
      rows.push_back(r);
    }
  rows.push_back({{"group", "world-hier"},
                  {"group_size", p},
                  {"algorithm", "hierarchical"},
                  {"op", "all_gather"},
                  {"size_bytes", sizes[0]},
                  {"tierzero", {{"time_us", 1.0}}}});  // skipped: not a flat ring
  return {{"results", rows}};
}

TEST(Calibration, CurvesFromSyntheticBenchRecoverTheTable) {
  const std::vector<double> sizes = {1024, 16384, 262144, 1048576};
  const std::vector<double> ag4 = {0.5, 2, 6, 8}, rs4 = {0.3, 1, 3, 4}, ag8 = {0.2, 1, 4, 7},
                            rs8 = {0.1, 0.6, 2, 3};
  // Three runs at 8 ranks (the middle one is the median), one at 4.
  const std::vector<nlohmann::json> benches = {
      bench_from_table(8, sizes, ag8, rs8, 0.9), bench_from_table(4, sizes, ag4, rs4),
      bench_from_table(8, sizes, ag8, rs8), bench_from_table(8, sizes, ag8, rs8, 1.3)};
  const std::vector<std::string> names = {"b8a.json", "b4.json", "b8b.json", "b8c.json"};
  const Topology flat = Topology::load("flat");
  const nlohmann::json curves = curves_from_bench(flat, benches, names, true);
  ASSERT_EQ(curves.size(), 4u);  // all_gather, reduce_scatter; tierzero and mpi
  nlohmann::json doc = flat.to_json();
  doc["collective_curves"] = curves;
  const Topology t = Topology::from_json(doc, "cal.json");
  const CollectiveCurve* ag = t.find_curve(0b1, "all_gather", "tierzero");
  const CollectiveCurve* rs = t.find_curve(0b1, "reduce_scatter", "tierzero");
  const CollectiveCurve* mpi = t.find_curve(0b1, "all_gather", "mpi");
  ASSERT_TRUE(ag && rs && mpi);
  ASSERT_EQ(ag->rows.size(), 2u);
  EXPECT_EQ(ag->rows[0].group_size, 4);
  EXPECT_EQ(ag->sizes_bytes, sizes);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_NEAR(ag->rows[0].busbw_GBps[i], ag4[i], 1e-9 * ag4[i]);
    EXPECT_NEAR(ag->rows[1].busbw_GBps[i], ag8[i], 1e-9 * ag8[i]);
    EXPECT_NEAR(rs->rows[1].busbw_GBps[i], rs8[i], 1e-9 * rs8[i]);
    EXPECT_NEAR(mpi->rows[1].busbw_GBps[i], ag8[i] / 2, 1e-9 * ag8[i]);
    // The curve gives back every measured point.
    EXPECT_NEAR(curve_busbw_GBps(*ag, 4, sizes[i]), ag4[i], 1e-9 * ag4[i]);
  }
  // Sizes that differ between documents are an error naming both.
  nlohmann::json other = bench_from_table(4, {2048, 16384, 262144, 1048576}, ag4, rs4);
  test::expect_input_error(
      [&] {
        curves_from_bench(flat, {benches[0], other}, {"b8a.json", "odd.json"});
      },
      {"odd.json", "b8a.json", "all_gather"});
  // A group the topology does not have.
  nlohmann::json bad = benches[1];
  for (auto& r : bad["results"]) r["group"] = "rack";
  test::expect_input_error([&] { curves_from_bench(flat, {bad}, {"rack.json"}); }, {"rack"});
  // calibrated_topology_json writes them and keeps the base topology's curves it did not re-measure.
  const nlohmann::json cal = calibrated_topology_json(
      flat, benches[1], "b4.json", {.tflops = 0.1, .source = "t"}, {benches[0]}, {"b8a.json"});
  const Topology ct = Topology::from_json(cal, "cal");
  EXPECT_EQ(ct.curves().size(), 2u);
  EXPECT_EQ(ct.find_curve(0b1, "all_gather", "tierzero")->rows.size(), 2u);
  const Topology frontier = Topology::load("frontier");
  const nlohmann::json kept =
      calibrated_topology_json(frontier, {{"results", nlohmann::json::array()}}, "none.json", {});
  EXPECT_EQ(Topology::from_json(kept, "kept").curves().size(), frontier.curves().size());
}

}  // namespace
}  // namespace tz::perf
