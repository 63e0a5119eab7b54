// `train --config FILE` with options: the file is read once per process (inotify counts every open
// of it), and an option given on the command line overrides the file's key wherever it stands on the
// line, including the options that set more than one field (--lr the WarmupLR peak, --prefetch
// replacing stage3_prefetch_bucket_size), while the keys no option gives keep the file's values.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <string>

#include "cli_test_util.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

// Opens of `path` seen since the watch began (IN_OPEN events), read without blocking.
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& path) : fd_(inotify_init1(IN_NONBLOCK)) {
    EXPECT_GE(fd_, 0);
    EXPECT_GE(inotify_add_watch(fd_, path.c_str(), IN_OPEN), 0) << path;
  }
  ~OpenCounter() { close(fd_); }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;

  int opens() {
    alignas(inotify_event) char buf[4096];
    for (ssize_t n; (n = read(fd_, buf, sizeof buf)) > 0;)
      for (char* p = buf; p < buf + n; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len)
        if (reinterpret_cast<inotify_event*>(p)->mask & IN_OPEN) ++opens_;
    return opens_;
  }

 private:
  int fd_;
  int opens_ = 0;
};

constexpr const char* kWarmupConfig =
    R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.01, "warmup_num_steps": 5}},
        "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 100000000},
        "train_micro_batch_size_per_gpu": 3, "steps_per_print": 1, "tierzero": {"train_steps": 9}})";

TEST(TrainConfigOptions, ConfigFileIsReadOncePerProcess) {
  test::ScratchDir dir;
  const std::string config = dir.write("once.json", kWarmupConfig);
  for (const bool print_plan : {true, false}) {
    SCOPED_TRACE(print_plan ? "--print-plan" : "two steps");
    OpenCounter counter(config);
    std::vector<std::string> args = {"train", "--config",      config,          "--seq",
                                     "16",    "--no-progress", "--peak-tflops", "1"};
    if (print_plan)
      args.push_back("--print-plan");
    else
      args.insert(args.end(), {"--steps", "2"});
    const test::CliResult res = test::run_cli(args);
    ASSERT_EQ(res.code, 0) << res.err;
    EXPECT_EQ(counter.opens(), 1) << "the config file was opened more than once";
  }
}

TEST(TrainConfigOptions, OptionsOverrideTheFileWhereverTheyStand) {
  test::ScratchDir dir;
  const std::string config = dir.write("warmup.json", kWarmupConfig);
  const test::CliResult res =
      test::run_cli({"train", "--steps", "2", "--lr", "0.002", "--config", config, "--prefetch", "0", "--seq",
                     "16", "--no-progress", "--peak-tflops", "1"});
  ASSERT_EQ(res.code, 0) << res.err;
  // --lr is the WarmupLR peak (warmup_max_lr 0.01 overridden), --prefetch 0 replaces the bucket size,
  // --steps 2 the file's 9; the micro-batch and steps_per_print are the file's.
  for (const char* shown : {"WarmupLR (DeepSpeed's): 5 log warmup steps from 0 to 0.002", "prefetch depth 0",
                            "micro-batch 3", "step     1/2", "step     2/2"})
    EXPECT_NE(res.out.find(shown), std::string::npos) << shown << "\n" << res.out;
  // Without the options, the file's values run.
  const test::CliResult file_only = test::run_cli(
      {"train", "--config", config, "--seq", "16", "--no-progress", "--peak-tflops", "1", "--print-plan"});
  ASSERT_EQ(file_only.code, 0) << file_only.err;
  EXPECT_NE(file_only.out.find("prefetch depth 5"), std::string::npos) << file_only.out;
  EXPECT_NE(file_only.out.find("micro-batch 3"), std::string::npos) << file_only.out;
}

TEST(TrainConfigOptions, SaveScheduleWithoutDirectoryNamesWhatSetIt) {
  test::ScratchDir dir;
  const std::string config = dir.write("keep.json", R"({"tierzero": {"keep": 2}})");
  test::expect_refused(
      {{"train", "--config", config}, {"config " + config + ": save_every 0, keep 2", "--save-dir"}});
  test::expect_refused(
      {{"train", "--config", config, "--save-every", "4"}, {"--save-every 4", "--save-dir"}});
  test::expect_refused({{"train", "--keep", "1"}, {"--keep 1", "--save-dir"}});
}

}  // namespace
}  // namespace tz
