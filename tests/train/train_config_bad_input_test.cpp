// Bad training-config files, read as `train --config FILE` reads them (TrainConfig::load): each is
// one line naming the file and the key, never a crash, a wrapped-around value or the whole value.
#include <gtest/gtest.h>

#include "core/json_read.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"
#include "train/train_config.hpp"

namespace tz {
namespace {

using test::expect_input_error;

TEST(TrainConfigBadInput, DuplicateKeys) {
  test::ScratchDir dir;
  const std::string top = dir.write("top.json", R"({"gradient_clipping": 1.0, "gradient_clipping": 2.0})");
  expect_input_error([&] { TrainConfig::load(top); }, {"config " + top, "duplicate key 'gradient_clipping'"});
  const std::string nested = dir.write(
      "nested.json", R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "eps": 1e-8, "lr": 2e-3}}})");
  expect_input_error([&] { TrainConfig::load(nested); },
                     {"config " + nested, "duplicate key 'optimizer.params.lr'"});
}

TEST(TrainConfigBadInput, NumberOutOfRange) {
  test::ScratchDir dir;
  const std::string path = dir.write("lr.json", R"({"optimizer": {"params": {"lr": 1e400}}})");
  expect_input_error([&] { TrainConfig::load(path); },
                     {"config " + path, "key 'optimizer.params.lr'", "1e400", "out of range"});
}

TEST(TrainConfigBadInput, DirectoryAndMissingFile) {
  test::ScratchDir dir;
  expect_input_error([&] { TrainConfig::load(dir.path("")); }, {"config " + dir.path(""), "is a directory"});
  expect_input_error([&] { TrainConfig::load(dir.path("none.json")); },
                     {"config " + dir.path("none.json"), "no such file"});
}

TEST(TrainConfigBadInput, DeepNesting) {
  test::ScratchDir dir;
  const std::string path = dir.write("deep.json", R"({"tierzero": )" + test::nested_arrays(100000) + "}");
  expect_input_error([&] { TrainConfig::load(path); }, {"config " + path, "nested deeper than 128 levels"});
}

TEST(TrainConfigBadInput, IntegersThatDoNotFit) {
  struct Case {
    const char* text;
    const char* fragment;
  };
  for (const Case& c : {
           Case{R"({"train_micro_batch_size_per_gpu": 4294967297})",
                "key 'train_micro_batch_size_per_gpu' must be an integer in [1, 1073741824], got 4294967297"},
           Case{R"({"gradient_accumulation_steps": 18446744073709551615})",
                "key 'gradient_accumulation_steps' must be an integer in [1, 1073741824], got "
                "18446744073709551615"},
           Case{R"({"seed": -1})", "key 'seed' must be an integer >= 0, got -1"},
           Case{R"({"zero_optimization": {"stage": 4294967299}})",
                "key 'stage' must be an integer in [0, 3], got 4294967299"},
           Case{R"({"zero_optimization": {"mics_shard_size": -4294967296}})",
                "key 'mics_shard_size' must be an integer in [-1, 1073741824], got -4294967296"},
           Case{R"({"tierzero": {"train_steps": 1e10}})",
                "key 'train_steps' must be an integer in [1, 1073741824], got 10000000000.0"},
           Case{R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 2.5}}})",
                "key 'warmup_num_steps' must be an integer"},
       }) {
    test::ScratchDir dir;
    const std::string path = dir.write("c.json", c.text);
    expect_input_error([&] { TrainConfig::load(path); }, {"config " + path, c.fragment});
  }
}

TEST(TrainConfigBadInput, HugeAndOddValuesAreQuotedShort) {
  test::ScratchDir dir;
  const std::string path =
      dir.write("big.json", R"({"gradient_clipping": ")" + std::string(25'000'000, 'x') + "\"}");
  try {
    TrainConfig::load(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("config " + path + ": key 'gradient_clipping' must be a number, got \"xxx"),
              std::string::npos);
    EXPECT_NE(msg.find("(25000000 bytes)"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 200 + path.size());
  }
  const std::string type = dir.write("type.json", R"({"optimizer": {"type": "SGD\nwith momentum"}})");
  expect_input_error([&] { TrainConfig::load(type); },
                     {"config " + type, "key 'type'", "\"SGD\\x0awith momentum\" is not supported"});
  const std::string key = dir.write("key.json", R"({"zero_optimization": {"offload\nparam": {}}})");
  expect_input_error([&] { TrainConfig::load(key); }, {"config " + key, "unknown key 'offload\\x0aparam'"});
}

}  // namespace
}  // namespace tz
