// Bad topology files, read as `--topology FILE` reads them (Topology::load).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"
#include "topology/topology.hpp"

namespace tz {
namespace {

using test::expect_input_error;

std::string tier(const std::string& name, const std::string& fanout) {
  return R"({"name": ")" + name + R"(", "fanout": )" + fanout + R"(, "bandwidth_GBps": 10, "latency_us": 1})";
}

TEST(TopologyBadInput, DuplicateKeys) {
  test::ScratchDir dir;
  const std::string path = dir.write(
      "dup.json", R"({"tiers": [)" + tier("gpu", "2") + R"(, {"name": "node", "fanout": 2, "fanout": 4,
                      "bandwidth_GBps": 1, "latency_us": 1}]})");
  expect_input_error([&] { Topology::load(path); }, {"topology " + path, "duplicate key 'tiers[1].fanout'"});
}

TEST(TopologyBadInput, NumbersAndIntegersOutOfRange) {
  test::ScratchDir dir;
  const std::string big =
      dir.write("big.json", R"({"tiers": [{"name": "a", "fanout": 2, "bandwidth_GBps": 1e400}]})");
  expect_input_error([&] { Topology::load(big); },
                     {"topology " + big, "key 'tiers[0].bandwidth_GBps'", "out of range"});
  const std::string u64 = dir.write("u64.json", R"({"tiers": [)" + tier("a", "18446744073709551615") + "]}");
  expect_input_error([&] { Topology::load(u64); },
                     {"topology " + u64,
                      "tiers[0]: key 'fanout' must be an integer in [1, 1048576], got 18446744073709551615"});
  // Three fan-outs of 2^20 multiply past an int (once a wrap-around to 0 ranks).
  const std::string product =
      dir.write("product.json", R"({"tiers": [)" + tier("a", "1048576") + ", " + tier("b", "1048576") + ", " +
                                    tier("c", "1048576") + "]}");
  expect_input_error([&] { Topology::load(product); },
                     {"topology " + product, "key 'tiers' fan-outs multiply to more than 1073741824 ranks"});
}

TEST(TopologyBadInput, DirectoryNestingAndNames) {
  test::ScratchDir dir;
  expect_input_error([&] { Topology::load(dir.path("")); }, {"topology " + dir.path(""), "is a directory"});
  const std::string deep = dir.write("deep.json", R"({"tiers": )" + test::nested_arrays(100000) + "}");
  expect_input_error([&] { Topology::load(deep); }, {"topology " + deep, "nested deeper than 128"});
  const std::string name = dir.write("name.json", R"({"tiers": [)" + tier("a\\nb", "2") + "]}");
  expect_input_error(
      [&] { Topology::load(name); },
      {"topology " + name, "tiers[0]: key 'name' must be a name of 1 to 64 bytes", "\"a\\x0ab\""});
  const std::string host =
      dir.write("host.json", R"({"tiers": [)" + tier("a", "2") + R"(], "host_tier": "x\ny"})");
  expect_input_error([&] { Topology::load(host); }, {"topology " + host, "names unknown tier 'x\\x0ay'"});
  std::string many = R"({"tiers": [)";
  for (int i = 0; i < 100000; ++i) {
    if (i > 0) many += ", ";
    many += tier(fmt::format("t{}", i), "1");
  }
  const std::string wide = dir.write("wide.json", many + "]}");
  expect_input_error([&] { Topology::load(wide); },
                     {"topology " + wide, "key 'tiers' has 100000 tiers, more than 16"});
}

}  // namespace
}  // namespace tz
