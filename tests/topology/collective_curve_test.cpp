// Measured collective curves: strict reading with one-line errors, and the interpolation of
// topology/collective_curve.hpp (exact at table points, monotone between them, the fast path equal
// to its reference, the extrapolation rules and the constant-block rule across group sizes).
#include "topology/collective_curve.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "support/expect_input_error.hpp"
#include "topology/topology.hpp"

namespace tz {
namespace {

using test::expect_input_error;

// Two tiers (a x4, b auto) and a world curve with three rows, as nccl-tests would print them.
nlohmann::json doc_with_curve() {
  return nlohmann::json::parse(R"({"name": "t", "tiers": [
    {"name": "a", "fanout": 4, "bandwidth_GBps": 100, "latency_us": 1},
    {"name": "b", "fanout": "auto", "bandwidth_GBps": 10, "latency_us": 5}],
    "collective_curves": [
      {"tiers": ["a", "b"], "op": "all_gather", "library": "rccl", "dtype": "bf16", "source": "test",
       "sizes_bytes": [1048576, 4194304, 16777216, 67108864],
       "rows": [{"group_size": 8, "busbw_GBps": [2, 6, 20, 40]},
                {"group_size": 32, "busbw_GBps": [1, 3, 10, 35]},
                {"group_size": 128, "busbw_GBps": [0.5, 1.5, 5, 30]}]},
      {"tiers": ["a"], "op": "reduce_scatter", "library": "tierzero", "source": "test",
       "sizes_bytes": [1024, 2048], "rows": [{"group_size": 4, "busbw_GBps": [1, 2]}]}]})");
}

TEST(CollectiveCurve, ReadsAndWritesBack) {
  const Topology topo = Topology::from_json(doc_with_curve(), "t.json");
  ASSERT_EQ(topo.curves().size(), 2u);
  const CollectiveCurve* c = topo.find_curve(0b11, "all_gather", "rccl");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->rows.size(), 3u);
  EXPECT_EQ(c->rows[1].group_size, 32);
  EXPECT_EQ(topo.find_curve(0b11, "all_gather", "nccl"), nullptr);
  EXPECT_EQ(topo.find_curve(0b01, "all_gather", "rccl"), nullptr);
  EXPECT_NE(topo.find_curve(0b01, "reduce_scatter", "tierzero"), nullptr);
  const Topology again = Topology::from_json(topo.to_json(), "again");
  ASSERT_EQ(again.curves().size(), 2u);
  EXPECT_EQ(again.curves()[0].rows[2].busbw_GBps, c->rows[2].busbw_GBps);
  EXPECT_EQ(again.curves()[0].source, "test");
  // Resolving keeps the curves.
  EXPECT_EQ(topo.resolve(64).curves().size(), 2u);
}

TEST(CollectiveCurve, ExactAtTablePointsAndFastEqualsReference) {
  const Topology topo = Topology::from_json(doc_with_curve(), "t.json");
  const CollectiveCurve& c = topo.curves()[0];
  for (const auto& row : c.rows)
    for (std::size_t i = 0; i < c.sizes_bytes.size(); ++i) {
      EXPECT_NEAR(curve_busbw_GBps(c, row.group_size, c.sizes_bytes[i]), row.busbw_GBps[i],
                  1e-12 * row.busbw_GBps[i])
          << row.group_size << " " << c.sizes_bytes[i];
      EXPECT_NEAR(curve_busbw_GBps_ref(c, row.group_size, c.sizes_bytes[i]), row.busbw_GBps[i],
                  1e-12 * row.busbw_GBps[i]);
    }
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> log_size(std::log(1e5), std::log(1e9));
  std::uniform_int_distribution<int> groups(1, 400);
  for (int k = 0; k < 2000; ++k) {
    const int p = 2 * groups(rng);
    const double s = std::exp(log_size(rng));
    const double fast = curve_busbw_GBps(c, p, s), ref = curve_busbw_GBps_ref(c, p, s);
    ASSERT_NEAR(fast, ref, 1e-12 * ref) << "p=" << p << " s=" << s;
  }
}

TEST(CollectiveCurve, MonotoneBetweenNeighbouringTablePoints) {
  const Topology topo = Topology::from_json(doc_with_curve(), "t.json");
  const CollectiveCurve& c = topo.curves()[0];
  // Within a row: between two sizes the value lies between the two measured values, monotonically.
  for (const auto& row : c.rows)
    for (std::size_t i = 0; i + 1 < c.sizes_bytes.size(); ++i) {
      double prev = row.busbw_GBps[i];
      for (int k = 1; k <= 16; ++k) {
        const double s = c.sizes_bytes[i] * std::pow(c.sizes_bytes[i + 1] / c.sizes_bytes[i], k / 16.0);
        const double v = curve_busbw_GBps(c, row.group_size, s);
        EXPECT_GE(v, prev - 1e-12) << row.group_size << " " << s;
        EXPECT_LE(v, std::max(row.busbw_GBps[i], row.busbw_GBps[i + 1]) + 1e-12);
        prev = v;
      }
    }
  // Across rows at a constant block: between the two rows' values at that block.
  const double block = 4194304.0 / 8;  // the 4 MiB point of the 8-rank row, 16 MiB of the 32-rank one
  double prev = curve_busbw_GBps(c, 8, block * 8);
  for (int p = 10; p <= 32; p += 2) {
    const double v = curve_busbw_GBps(c, p, block * p);
    EXPECT_GE(v, prev - 1e-12) << p;  // 6 GB/s at 8 ranks rising to 10 at 32
    EXPECT_LE(v, curve_busbw_GBps(c, 32, block * 32) + 1e-12) << p;
    prev = v;
  }
}

TEST(CollectiveCurve, ExtrapolationAlphaBetaBelowBusbwAboveAndBlockAcrossRows) {
  const Topology topo = Topology::from_json(doc_with_curve(), "t.json");
  const CollectiveCurve& c = topo.curves()[0];
  // Below the smallest size: the alpha-beta line through the two smallest sizes. Row 8: t = S/busbw
  // is 1 MiB / 2 and 4 MiB / 6 GB/s, so t = a + S/B with B = 18 GB/s and a = 1 MiB (1/2 - 1/18) / 1e9.
  const double mib = 1048576.0;
  const double a = mib * (1.0 / 2 - 1.0 / 18) / 1e9;
  EXPECT_NEAR(curve_busbw_GBps(c, 8, mib / 4), (mib / 4) / (a + mib / 4 / 18e9) / 1e9, 1e-9);
  EXPECT_NEAR(curve_busbw_GBps_ref(c, 8, mib / 4), (mib / 4) / (a + mib / 4 / 18e9) / 1e9, 1e-9);
  // Far below, the latency dominates: busbw in proportion to the size.
  EXPECT_NEAR(curve_busbw_GBps(c, 8, 1.0) / curve_busbw_GBps(c, 8, 2.0), 0.5, 1e-6);
  // A line that would give a negative latency is clamped to none: busbw held.
  nlohmann::json d = doc_with_curve();
  d["collective_curves"][0]["rows"][0]["busbw_GBps"] = {9, 2, 20, 40};  // time grows 18x over 4x size
  const Topology neg = Topology::from_json(d, "neg");
  EXPECT_NEAR(curve_busbw_GBps(neg.curves()[0], 8, mib / 2), 9, 1e-9);
  EXPECT_NEAR(curve_busbw_GBps_ref(neg.curves()[0], 8, mib / 2), 9, 1e-9);
  // Above the largest: the bandwidth bound.
  EXPECT_NEAR(curve_busbw_GBps(c, 8, 1e12), 40, 1e-12);
  // A group larger than any row: the largest row read at the same block (128 ranks, 16 MiB ->
  // 256 ranks, 32 MiB).
  EXPECT_NEAR(curve_busbw_GBps(c, 256, 2 * 16777216.0), 5, 1e-12);
  // Smaller than any row: the smallest row at the same block (8 ranks, 4 MiB -> 4 ranks, 2 MiB).
  EXPECT_NEAR(curve_busbw_GBps(c, 4, 2097152), 6, 1e-12);
  // Between rows, at a block both rows measured: the geometric mean at the log-midpoint 16.
  EXPECT_NEAR(curve_busbw_GBps(c, 16, 16 * (4194304.0 / 8)),
              std::sqrt(6.0 * curve_busbw_GBps(c, 32, 32 * (4194304.0 / 8))), 1e-9);
}

TEST(CollectiveCurve, BadCurvesGiveOneLineErrors) {
  auto with = [](const std::string& path, const nlohmann::json& value) {
    nlohmann::json d = doc_with_curve();
    d[nlohmann::json::json_pointer(path)] = value;
    return d;
  };
  auto fails = [](const nlohmann::json& d, std::initializer_list<std::string> frags) {
    expect_input_error([&] { Topology::from_json(d, "t.json"); }, frags);
  };
  fails(with("/collective_curves/0/op", "gather"), {"t.json", "collective_curves[0]", "op", "gather"});
  fails(with("/collective_curves/0/tiers", {"a", "c"}), {"collective_curves[0]", "tiers", "'c'"});
  fails(with("/collective_curves/0/tiers", {"a", "a"}), {"tiers", "twice"});
  fails(with("/collective_curves/0/source", ""), {"collective_curves[0]", "source"});
  fails(with("/collective_curves/0/library", ""), {"library"});
  fails(with("/collective_curves/0/sizes_bytes/2", 1e6), {"sizes_bytes", "strictly increasing"});
  fails(with("/collective_curves/0/rows/1/busbw_GBps", {1, 2, 3}),
        {"rows[1]", "busbw_GBps", "3 values", "4 sizes"});
  fails(with("/collective_curves/0/rows/1/busbw_GBps/2", -1), {"rows[1]", "busbw_GBps", "[2]", "-1"});
  fails(with("/collective_curves/0/rows/1/busbw_GBps/2", "fast"), {"rows[1]", "busbw_GBps", "[2]", "fast"});
  fails(with("/collective_curves/0/rows/1/group_size", 4), {"rows[1]", "group_size", "previous"});
  fails(with("/collective_curves/0/rows/0/group_size", 6), {"rows[0]", "group_size 6", "multiple of 4"});
  fails(with("/collective_curves/1/rows/0/group_size", 8),
        {"collective_curves[1]", "group_size 8", "exactly 4"});
  fails(with("/collective_curves/0/rows/0/speed", 1), {"rows[0]", "unknown key 'speed'"});
  fails(with("/collective_curves/0/bandwidth", 1), {"collective_curves[0]", "unknown key 'bandwidth'"});
  nlohmann::json dup = doc_with_curve();
  dup["collective_curves"].push_back(dup["collective_curves"][0]);
  fails(dup, {"collective_curves[2]", "second all_gather curve by rccl"});
  nlohmann::json not_array = doc_with_curve();
  not_array["collective_curves"] = 3;
  fails(not_array, {"collective_curves", "array"});
}

}  // namespace
}  // namespace tz
