// Bad model-shape files, read as `plan --model FILE` reads them (perf::load_model_shape).
#include <gtest/gtest.h>

#include "core/json_read.hpp"
#include "perf/model_shape.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz::perf {
namespace {

using test::expect_input_error;

constexpr const char* kRest = R"("n_embd": 32, "n_head": 4, "n_positions": 16, "vocab_size": 61)";

TEST(ModelShapeBadInput, DuplicateKeyAndRange) {
  test::ScratchDir dir;
  const std::string dup =
      dir.write("dup.json", std::string(R"({"name": "a", "name": "b", "n_layer": 2, )") + kRest + "}");
  expect_input_error([&] { load_model_shape(dup); }, {"model config " + dup, "duplicate key 'name'"});
  const std::string big = dir.write("big.json", std::string(R"({"n_layer": -1e400, )") + kRest + "}");
  expect_input_error([&] { load_model_shape(big); },
                     {"model config " + big, "key 'n_layer'", "out of range"});
  const std::string wrap =
      dir.write("wrap.json", std::string(R"({"n_layer": 9223372036854775808, )") + kRest + "}");
  expect_input_error([&] { load_model_shape(wrap); },
                     {"model config " + wrap,
                      "key 'n_layer' must be an integer in [1, 1073741824], got 9223372036854775808"});
}

TEST(ModelShapeBadInput, DirectoryNestingAndNames) {
  test::ScratchDir dir;
  expect_input_error([&] { load_model_shape(dir.path("")); },
                     {"model config " + dir.path(""), "is a directory"});
  const std::string deep = dir.write("deep.json", R"({"note": )" + test::nested_arrays(100000) + "}");
  expect_input_error([&] { load_model_shape(deep); }, {"model config " + deep, "nested deeper than 128"});
  const std::string name =
      dir.write("name.json", std::string(R"({"name": "two\nlines", "n_layer": 2, )") + kRest + "}");
  expect_input_error([&] { load_model_shape(name); },
                     {"model config " + name, "key 'name' must be a name of 1 to 64 bytes"});
  expect_input_error([&] { load_model_shape(std::string(5000, 'm')); }, {"neither a preset", "(5000 bytes)"});
}

}  // namespace
}  // namespace tz::perf
