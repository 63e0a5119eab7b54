// Bad GPT-2 style config.json files, read as `train --model FILE` reads them (GptConfig::load).
#include <gtest/gtest.h>

#include "core/json_read.hpp"
#include "model/gpt_config.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

using test::expect_input_error;

constexpr const char* kRest = R"("n_embd": 32, "n_head": 4, "n_positions": 16, "vocab_size": 61)";

TEST(GptConfigBadInput, DuplicateKey) {
  test::ScratchDir dir;
  const std::string path =
      dir.write("dup.json", std::string(R"({"n_layer": 2, "n_layer": 3, )") + kRest + "}");
  expect_input_error([&] { GptConfig::load(path); }, {"model config " + path, "duplicate key 'n_layer'"});
}

TEST(GptConfigBadInput, NumberOutOfRange) {
  test::ScratchDir dir;
  const std::string path = dir.write("big.json", std::string(R"({"n_layer": 1e400, )") + kRest + "}");
  expect_input_error([&] { GptConfig::load(path); },
                     {"model config " + path, "key 'n_layer'", "out of range"});
}

TEST(GptConfigBadInput, IntegerOverflow) {
  test::ScratchDir dir;
  // 2^32 + 2 was 2 once cast to int.
  const std::string path = dir.write("wrap.json", std::string(R"({"n_layer": 4294967298, )") + kRest + "}");
  expect_input_error(
      [&] { GptConfig::load(path); },
      {"model config " + path, "key 'n_layer' must be an integer in [1, 1073741824], got 4294967298"});
  const std::string ctx =
      dir.write("ctx.json", std::string(R"({"n_layer": 2, "n_ctx": 18446744073709551615, )") + kRest + "}");
  expect_input_error([&] { GptConfig::load(ctx); },
                     {"model config " + ctx, "key 'n_ctx' must be an integer"});
}

TEST(GptConfigBadInput, DirectoryAndDeepNesting) {
  test::ScratchDir dir;
  expect_input_error([&] { GptConfig::load(dir.path("")); },
                     {"model config " + dir.path(""), "is a directory"});
  const std::string deep = dir.write("deep.json", test::nested_arrays(100000));
  expect_input_error([&] { GptConfig::load(deep); }, {"model config " + deep, "nested deeper than 128"});
  const std::string type =
      dir.write("type.json", std::string(R"({"n_layer": 2, "model_type": "bert\n", )") + kRest + "}");
  expect_input_error([&] { GptConfig::load(type); },
                     {"model config " + type, "key 'model_type'", "\"bert\\x0a\""});
}

}  // namespace
}  // namespace tz
