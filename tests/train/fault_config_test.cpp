// The fault keys of the training config (docs/faults.md): tierzero.check_collectives,
// tierzero.startup_timeout_s (range-checked) and tierzero.flight_recorder.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"
#include "train/train_config.hpp"

namespace tz {
namespace {

using test::expect_input_error;

TEST(FaultConfig, KeysAreReadAndCheckCollectivesIsPartOfTheAgreedConfig) {
  test::ScratchDir dir;
  const TrainConfig d;
  EXPECT_FALSE(d.check_collectives);
  EXPECT_EQ(d.startup_timeout_s, 120);
  EXPECT_EQ(d.flight_recorder, "tierzero-flight");
  const std::string path = dir.write(
      "f.json",
      R"({"tierzero": {"check_collectives": true, "startup_timeout_s": 7.5, "flight_recorder": "/tmp/fr"}})");
  const TrainConfig c = TrainConfig::load(path);
  EXPECT_TRUE(c.check_collectives);
  EXPECT_EQ(c.startup_timeout_s, 7.5);
  EXPECT_EQ(c.flight_recorder, "/tmp/fr");
  EXPECT_EQ(c.to_json().at("tierzero").at("check_collectives"), true);
}

TEST(FaultConfig, BadValuesNameTheKeyAndValue) {
  test::ScratchDir dir;
  for (const char* v : {"0", "-1", "86401"}) {
    const std::string path =
        dir.write("t.json", std::string(R"({"tierzero": {"startup_timeout_s": )") + v + "}}");
    expect_input_error([&] { TrainConfig::load(path); }, {path, "startup_timeout_s", "(0, 86400]"});
  }
  const std::string flag = dir.write("c.json", R"({"tierzero": {"check_collectives": 1}})");
  expect_input_error([&] { TrainConfig::load(flag); }, {flag, "check_collectives"});
  const std::string empty = dir.write("e.json", R"({"tierzero": {"flight_recorder": ""}})");
  expect_input_error([&] { TrainConfig::load(empty); }, {empty, "flight_recorder", "must name a directory"});
}

}  // namespace
}  // namespace tz
