// Bandwidths with units: strings parsed exactly (bits vs bytes, decimal vs binary prefixes), numbers
// under the _GBps keys as GB/s, and the old _gbps keys refused with what they became.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/bandwidth_text.hpp"
#include "support/expect_input_error.hpp"
#include "topology/topology.hpp"

namespace tz {
namespace {

using test::expect_input_error;

TEST(BandwidthText, UnitsAreReadExactly) {
  EXPECT_EQ(parse_bandwidth_GBps("400Gb/s", "k"), 50.0);
  EXPECT_EQ(parse_bandwidth_GBps("400 Gb/s", "k"), 50.0);
  EXPECT_EQ(parse_bandwidth_GBps("50GB/s", "k"), 50.0);
  EXPECT_EQ(parse_bandwidth_GBps("12.5GB/s", "k"), 12.5);
  EXPECT_EQ(parse_bandwidth_GBps("100Gb/s", "k"), 12.5);
  EXPECT_EQ(parse_bandwidth_GBps("1.6TB/s", "k"), 1600.0);
  EXPECT_EQ(parse_bandwidth_GBps("800Tb/s", "k"), 100000.0);
  EXPECT_EQ(parse_bandwidth_GBps("1500MB/s", "k"), 1.5);
  EXPECT_EQ(parse_bandwidth_GBps("8000Mb/s", "k"), 1.0);
  EXPECT_EQ(parse_bandwidth_GBps("2e9B/s", "k"), 2.0);
  EXPECT_EQ(parse_bandwidth_GBps("1GiB/s", "k"), 1.073741824);
  EXPECT_EQ(parse_bandwidth_GBps("1024MiB/s", "k"), 1.073741824);
  EXPECT_EQ(parse_bandwidth_GBps("8000000kb/s", "k"), 1.0);
  EXPECT_EQ(parse_bandwidth_GBps("1000000kB/s", "k"), 1.0);
}

TEST(BandwidthText, AnythingElseIsAnErrorNamingTheKeyAndUnits) {
  for (const char* bad : {"400", "400G", "400 gbps", "400Gbps", "400gb/s", "400  Gb/s", " 400Gb/s", "Gb/s",
                          "", "inf GB/s", "nanGB/s", "400Gb/s ", "400GB/sec", "0x10GB/s"})
    expect_input_error([&] { parse_bandwidth_GBps(bad, "tiers[0]: key 'bandwidth_GBps'"); },
                       {"tiers[0]: key 'bandwidth_GBps'", "Gb/s", "GB/s"});
}

nlohmann::json topology_with(const nlohmann::json& tier, const nlohmann::json& device = nullptr) {
  nlohmann::json doc = {{"name", "t"}, {"tiers", {tier}}};
  if (!device.is_null()) doc["device"] = device;
  return doc;
}

TEST(BandwidthText, TopologyKeysTakeNumbersAndStrings) {
  const Topology a = Topology::from_json(
      topology_with({{"name", "world"},
                     {"fanout", 2},
                     {"bandwidth_GBps", "400Gb/s"},
                     {"latency_us", 1},
                     {"reduce_GBps", "2GB/s"}},
                    {{"peak_tflops", 1}, {"memory_bandwidth_GBps", "1.6TB/s"}, {"quant_GBps", 300}}),
      "t.json");
  EXPECT_EQ(a.tier(0).bandwidth_GBps, 50.0);
  EXPECT_EQ(a.tier(0).reduce_GBps, 2.0);
  EXPECT_EQ(a.device().memory_bandwidth_GBps, 1600.0);
  EXPECT_EQ(a.device().quant_GBps, 300.0);
  const Topology b = Topology::from_json(
      topology_with({{"name", "world"}, {"fanout", 2}, {"bandwidth_GBps", 12.5}, {"latency_us", 1}}),
      "t.json");
  EXPECT_EQ(b.tier(0).bandwidth_GBps, 12.5);
  expect_input_error(
      [] {
        Topology::from_json(
            topology_with({{"name", "world"}, {"fanout", 2}, {"bandwidth_GBps", "400G"}, {"latency_us", 1}}),
            "t.json");
      },
      {"t.json", "bandwidth_GBps", "400G"});
  expect_input_error(
      [] {
        Topology::from_json(
            topology_with({{"name", "world"}, {"fanout", 2}, {"bandwidth_GBps", true}, {"latency_us", 1}}),
            "t.json");
      },
      {"t.json", "bandwidth_GBps", "true"});
  expect_input_error(
      [] {
        Topology::from_json(
            topology_with(
                {{"name", "world"}, {"fanout", 2}, {"bandwidth_GBps", "-5GB/s"}, {"latency_us", 1}}),
            "t.json");
      },
      {"t.json", "bandwidth_GBps", "must be > 0"});
}

TEST(BandwidthText, OldKeysSayWhatTheyBecame) {
  expect_input_error(
      [] {
        Topology::from_json(
            topology_with({{"name", "world"}, {"fanout", 2}, {"bandwidth_gbps", 12.5}, {"latency_us", 1}}),
            "t.json");
      },
      {"t.json", "'bandwidth_gbps'", "renamed 'bandwidth_GBps'", "Gb/s"});
  expect_input_error(
      [] {
        Topology::from_json(topology_with({{"name", "world"},
                                           {"fanout", 2},
                                           {"bandwidth_GBps", 12.5},
                                           {"latency_us", 1},
                                           {"reduce_gbps", 1}}),
                            "t.json");
      },
      {"'reduce_gbps'", "renamed 'reduce_GBps'"});
  for (const char* key : {"memory_bandwidth_gbps", "quant_gbps"})
    expect_input_error(
        [&] {
          Topology::from_json(
              topology_with({{"name", "world"}, {"fanout", 2}, {"bandwidth_GBps", 1}, {"latency_us", 1}},
                            {{"peak_tflops", 1}, {key, 100}}),
              "t.json");
        },
        {std::string("'") + key + "'", "renamed"});
  nlohmann::json doc =
      topology_with({{"name", "world"}, {"fanout", "auto"}, {"bandwidth_GBps", 1}, {"latency_us", 1}});
  doc["collective_curves"] = {{{"tiers", {"world"}},
                               {"op", "all_gather"},
                               {"library", "nccl"},
                               {"source", "test"},
                               {"sizes_bytes", {1e6, 1e7}},
                               {"rows", {{{"group_size", 2}, {"busbw_gbps", {1, 2}}}}}}};
  expect_input_error([&] { Topology::from_json(doc, "t.json"); }, {"'busbw_gbps'", "renamed 'busbw_GBps'"});
}

}  // namespace
}  // namespace tz
