// What the CLI prints, checked as text: bench comm in nccl-tests' columns with its average-busbw
// footer, plan's cost table staying aligned with long placements, the ETA format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "cli/comm_bench_table.hpp"
#include "cli/progress_line.hpp"
#include "perf/auto_planner.hpp"
#include "perf/cost_report.hpp"
#include "perf/model_shape.hpp"

namespace tz {
namespace {

TEST(Presentation, CommBenchHasNcclTestsColumnsAndAverageBusbw) {
  nlohmann::json doc = {{"topology", "flat"},
                        {"world_size", 2},
                        {"dtype", "f32"},
                        {"native_library", "none"},
                        {"results", nlohmann::json::array()}};
  for (double busbw : {1.0, 3.0})
    doc["results"].push_back({{"group", "world"},
                              {"group_size", 2},
                              {"algorithm", "flat"},
                              {"op", "all_reduce"},
                              {"size_bytes", 4096},
                              {"count", 1024},
                              {"tierzero", {{"time_us", 10.0}, {"algbw_GBps", busbw}, {"busbw_GBps", busbw}}},
                              {"native", nullptr},
                              {"ratio", nullptr}});
  const std::string t = cli::format_comm_bench_table(doc);
  for (const char* col : {"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "(B)",
                          "(elements)", "(us)", "(GB/s)"})
    EXPECT_NE(t.find(col), std::string::npos) << col << "\n" << t;
  EXPECT_NE(t.find("float"), std::string::npos);
  EXPECT_NE(t.find("sum"), std::string::npos);
  EXPECT_NE(t.find("# Avg bus bandwidth: 2.0000 GB/s tierzero"), std::string::npos) << t;
  EXPECT_NE(t.find("# Avg bus bandwidth (all rows): 2.0000 GB/s tierzero"), std::string::npos) << t;
}

TEST(Presentation, CostTableStaysAlignedForLongPlacements) {
  const Topology topo = Topology::from_json(nlohmann::json::parse(R"({"name": "long", "tiers": [
      {"name": "accelerator-pair", "fanout": 2, "bandwidth_GBps": 200, "latency_us": 2},
      {"name": "whole-node-of-eight", "fanout": 4, "bandwidth_GBps": 50, "latency_us": 3},
      {"name": "entire-system", "fanout": 2, "bandwidth_GBps": 12.5, "latency_us": 5}],
      "device": {"name": "test", "peak_tflops": 100, "memory_gib": 64}})"),
                                            "test")
                            .resolve(16);
  const perf::ModelShape model = perf::load_model_shape("gpt-tiny");
  std::vector<perf::CostRow> rows;
  for (const auto& name : PartitionPlan::preset_names()) {
    PartitionPlan p = perf::preset_with_options(name, topo, PlanOptions{});
    rows.push_back({p, perf::predict_step(model, topo, p, {})});
  }
  std::istringstream lines(perf::format_cost_table(topo, rows));
  std::string line;
  std::size_t width = 0, where_mem = std::string::npos;
  int n = 0;
  while (std::getline(lines, line)) {
    if (n == 0) where_mem = line.find("mem_GiB") + std::string("mem_GiB").size();
    if (width == 0) width = line.size();
    EXPECT_EQ(line.size(), width) << line;
    // The memory column ends at the same place on every row.
    if (n > 0) {
      EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[where_mem - 1]))) << line;
    }
    ++n;
  }
  EXPECT_EQ(n, static_cast<int>(rows.size()) + 1);
}

TEST(Presentation, Eta) {
  EXPECT_EQ(cli::format_eta(5.4), "5s");
  EXPECT_EQ(cli::format_eta(187), "3m07s");
  EXPECT_EQ(cli::format_eta(7500), "2h05m");
  EXPECT_EQ(cli::format_eta(-1), "?");
}

}  // namespace
}  // namespace tz
