// Bad plan JSON (plan_spec_from_json / plan_from_json) read from a file through the strict reader.
#include <gtest/gtest.h>

#include "core/json_read.hpp"
#include "plan/partition_plan.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

using test::expect_input_error;

PartitionPlan load_plan(const std::string& path) {
  static const Topology topo = Topology::load("frontier-mini").resolve(8);
  return plan_from_json(read_json_file(path, "plan"), topo, path);
}

TEST(PlanJsonBadInput, DuplicateKeyAndNumberRange) {
  test::ScratchDir dir;
  const std::string dup = dir.write("dup.json", R"({"preset": "zero3", "preset": "ddp"})");
  expect_input_error([&] { load_plan(dup); }, {"plan " + dup, "duplicate key 'preset'"});
  const std::string big = dir.write("big.json", R"({"preset": "zeropp", "quant_block": 1e400})");
  expect_input_error([&] { load_plan(big); }, {"plan " + big, "key 'quant_block'", "out of range"});
  expect_input_error([&] { load_plan(dir.path("")); }, {"plan " + dir.path(""), "is a directory"});
  const std::string deep = dir.write("deep.json", test::nested_arrays(100000));
  expect_input_error([&] { load_plan(deep); }, {"plan " + deep, "nested deeper than 128"});
}

TEST(PlanJsonBadInput, IntegersThatDoNotFit) {
  struct Case {
    const char* text;
    const char* fragment;
  };
  for (const Case& c : {
           // 2^32 + 4 was 4 once cast to int: a valid partition size of frontier-mini.
           Case{R"({"preset": "mics", "partition_size": 4294967300})",
                "key 'partition_size' must be an integer in [0, 1073741824], got 4294967300"},
           Case{R"({"preset": "zeropp", "hpz_partition_size": -2})",
                "key 'hpz_partition_size' must be an integer in [0"},
           Case{R"({"preset": "zero3", "prefetch_depth": 65})",
                "key 'prefetch_depth' must be an integer in [0, 64], got 65"},
           Case{R"({"preset": "zero3", "micro_batch_size": 18446744073709551615})",
                "key 'micro_batch_size' must be an integer"},
           Case{R"({"preset": "zero3", "gradient_accumulation_steps": 0})",
                "key 'gradient_accumulation_steps' must be an integer in [1, 1073741824], got 0"},
       }) {
    test::ScratchDir dir;
    const std::string path = dir.write("p.json", c.text);
    expect_input_error([&] { load_plan(path); }, {"plan " + path, c.fragment});
  }
}

TEST(PlanJsonBadInput, StringsAreQuotedShort) {
  test::ScratchDir dir;
  const std::string tier = dir.write("tier.json", R"({"W": "rack\nrow"})");
  expect_input_error([&] { load_plan(tier); }, {"names unknown tier 'rack\\x0arow'"});
  const std::string preset = dir.write("preset.json", R"({"preset": ")" + std::string(100000, 'p') + "\"}");
  expect_input_error([&] { load_plan(preset); }, {"unknown preset 'pppp", "(100000 bytes)"});
  const std::string name = dir.write("name.json", R"({"name": "", "preset": "zero3"})");
  expect_input_error([&] { load_plan(name); },
                     {"plan " + name, "key 'name' must be a name of 1 to 64 bytes"});
  const std::string dtype = dir.write("dtype.json", R"({"dtype": "fp\n16"})");
  expect_input_error([&] { load_plan(dtype); }, {"plan " + dtype, "key 'dtype'", "'fp\\x0a16'"});
}

}  // namespace
}  // namespace tz
