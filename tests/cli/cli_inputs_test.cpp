// Values that parse but cannot run, refused before anything is allocated or trained, each naming the
// option or key: a micro-batch the machine's memory cannot hold (from the command line or a config),
// --max-bytes beyond it, a world of nodes that overflows, options that exclude or need each other,
// --plan auto on a topology without a device peak, and the defaults --help shows being the ones that run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "cli_test_util.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

TEST(CliInputs, RefusedBeforeRunning) {
  test::ScratchDir dir;
  const std::string big = dir.write("big.json", R"({"train_micro_batch_size_per_gpu": 1000000000})");
  const test::RefusedRun rows[] = {
      {{"train", "--micro-batch", "1000000000"}, {"micro-batch 1000000000", "--micro-batch", "GiB"}},
      {{"train", "--batch", "1073741824", "--recompute"}, {"--micro-batch", "GiB"}},
      {{"train", "--config", big}, {"micro-batch 1000000000", "train_micro_batch_size_per_gpu", big}},
      {{"bench", "comm", "--max-bytes", "1000000000000"}, {"--max-bytes 1000000000000", "GiB"}},
      {{"bench", "comm", "--min-bytes", "1M", "--max-bytes", "4K"}, {"--min-bytes", "--max-bytes"}},
      {{"bench", "qcomm", "--thread-ranks", "64", "--sizes", "67108864"}, {"--sizes 67108864", "GiB"}},
      {{"plan", "--nodes", "536870913"}, {"--nodes 536870913"}},
      {{"plan", "--nodes", "200000"}, {"--nodes 200000", "1600000 ranks"}},
      {{"simulate", "--nodes", "1", "300000", "--no-charts", "--out", dir.path("sim")}, {"--nodes 300000"}},
      {{"plan", "--nodes", "2", "--world-size", "16"}, {"--nodes", "--world-size"}},
      {{"topology", "frontier", "--nodes", "2", "--world-size", "16"}, {"--nodes", "--world-size"}},
      {{"train", "--eval-every", "5"}, {"--eval-every", "--val-data"}},
      {{"train", "--plan", "auto"}, {"flat", "peak_tflops"}},
      {{"train", "--steps", "0", "--init-from", dir.path("m.safetensors")}, {"--steps 0", "--save-dir"}},
      {{"train", "--seq", "129"}, {"129", "n_positions"}},
      {{"train", "--unknown-option", "1"}, {"--unknown-option"}},
      {{"sample", "--weights", dir.path("none.bin"), "--prompt", "hi"}, {"--weights", "none.bin"}},
      {{"sample", "--weights", dir.path(""), "--prompt", "hi"}, {"--weights", "checkpoint"}},
  };
  for (const test::RefusedRun& r : rows) test::expect_refused(r);
}

TEST(CliInputs, HelpShowsTheDefaultsThatRun) {
  const test::CliResult res = test::run_cli({"train", "--help"});
  EXPECT_EQ(res.code, 0);
  // TrainConfig's defaults (tests/train/deepspeed_config_test.cpp checks a config without the keys
  // reads to the same values).
  for (const char* shown :
       {"--steps INT=300", "--micro-batch,--batch INT=8", "--lr NUM=0.001", "--warmup INT=20",
        "--log-every INT=10", "--grad-accum,--accumulation INT=1", "--clip NUM=1"})
    EXPECT_NE(res.out.find(shown), std::string::npos) << shown << "\n" << res.out;
  const test::CliResult plan = test::run_cli({"plan", "--help"});
  for (const char* shown : {"--micro-batch,--batch INT=1", "--grad-accum,--accumulation INT=1",
                            "--prefetch INT=1", "--collectives"})
    EXPECT_NE(plan.out.find(shown), std::string::npos) << shown << "\n" << plan.out;
}

// Under a launcher, a rank other than 0 that fails before the world exists gives rank 0 time to
// report first (the launcher ends the job when one rank exits with an error); still alive after
// that, it reports the error itself, naming its rank. Rank 0 reports at once, without a rank.
TEST(CliInputs, AnotherRankFailingBeforeTheWorldWaitsForRankZeroThenNamesItself) {
  ASSERT_EQ(setenv("OMPI_COMM_WORLD_RANK", "2", 1), 0);
  const auto start = std::chrono::steady_clock::now();
  const test::CliResult other = test::run_cli({"train", "--steps", "0"});
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(unsetenv("OMPI_COMM_WORLD_RANK"), 0);
  EXPECT_EQ(other.code, 2);
  EXPECT_GE(waited_s, 4.5);
  EXPECT_NE(other.err.find("tierzero: rank 2: error: --steps 0: must be an integer"), std::string::npos)
      << other.err;
  const auto lead_start = std::chrono::steady_clock::now();
  const test::CliResult lead = test::run_cli({"train", "--steps", "0"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - lead_start).count(), 4.5);
  EXPECT_EQ(lead.code, 2);
  EXPECT_NE(lead.err.find("tierzero: error: --steps 0"), std::string::npos) << lead.err;
}

}  // namespace
}  // namespace tz
