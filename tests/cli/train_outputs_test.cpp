// `train`'s inputs and outputs that used to fail late or not at all, now refused before the first step
// with one line naming the option and the path: token ids a uint32 shard holds beyond the vocabulary
// (2^31 and more crashed the unigram-entropy pass), a save directory that cannot hold checkpoints,
// checkpoint options without a save directory, and a --weights-out or --init-out that is a directory
// or a device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "cli_test_util.hpp"
#include "data/data_test_util.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

TEST(TrainOutputs, RefusedBeforeTheFirstStep) {
  test::ScratchDir dir;
  const std::string file = dir.write("file", "x");
  std::filesystem::create_directories(dir.path("folder"));
  const std::vector<std::string> tiny = {"train", "--model", "gpt-tiny", "--steps", "1", "--no-progress"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::vector<test::RefusedRun> rows = {
      {{"train", "--save-every", "5"}, {"--save-every 5", "need a save directory", "--save-dir"}},
      {{"train", "--keep", "2"}, {"--keep 2", "need a save directory"}},
      {{"train", "--weights-out", dir.path("folder")}, {"--weights-out", "is a directory"}},
      {{"train", "--weights-out", "/dev/null"}, {"--weights-out /dev/null", "not a regular file", ".json"}},
      {{"train", "--init-out", dir.path("none/p.bin")}, {"--init-out", "folder", "does not exist"}},
      {with({"--save-dir", file}), {"save directory " + file, "not a directory"}},
      {with({"--save-dir", "/dev/null"}), {"save directory /dev/null", "not a directory"}},
      {with({"--save-dir", "/proc/self/x"}), {"save directory /proc/self/x", "cannot create"}},
  };
  // Ids of 2^31 and more crashed the run (a negative index); the largest fitting id of a uint32 shard
  // too, for a vocabulary of 256.
  for (std::uint32_t id : {0x80000000u, 0xFFFFFFFFu, 256u}) {
    const std::string shard = dir.write(fmt::format("u32_{}.bin", id), test::uint32_shard_bytes(id, 3000));
    rows.push_back({with({"--data", shard}),
                    {shard, fmt::format("token id {} at token index 0", id),
                     "outside the model's vocabulary [0, 256)"}});
  }
  for (const test::RefusedRun& r : rows) {
    const test::CliResult res = test::expect_refused(r);
    EXPECT_EQ(res.out.find("step "), std::string::npos) << "a step ran:\n" << res.out;
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/null.json"));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // The largest id the vocabulary holds trains.
  const std::string last = dir.write("u32_last.bin", test::uint32_shard_bytes(255, 3000));
  const test::CliResult ok = test::run_cli(with({"--data", last, "--seq", "16", "--batch", "1"}));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
}  // namespace tz
