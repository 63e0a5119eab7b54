// The kernel pool (core/parallel_for.hpp): every item is run exactly once, for jobs back to back and
// for jobs after the workers have gone to sleep, at several thread counts; a nested call runs inline,
// and calls from several threads at once each complete.
#include "core/parallel_for.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tz {
namespace {

class ParallelFor : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_parallel_threads(GetParam()); }
  void TearDown() override { set_parallel_threads(1); }
};

// Runs one job over n items and checks that each ran once.
void expect_each_once(std::size_t n, std::size_t grain) {
  std::vector<std::atomic<int>> hits(n);
  parallel_for(n, grain, [&](std::size_t b, std::size_t e) {
    ASSERT_LE(b, e);
    ASSERT_LE(e, n);
    for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i << " of " << n;
}

TEST_P(ParallelFor, BackToBackJobsRunEveryItemOnce) {
  for (int job = 0; job < 2000; ++job) expect_each_once(1 + job % 97, 1 + job % 5);
}

TEST_P(ParallelFor, JobsAfterTheWorkersSleptRunEveryItemOnce) {
  for (int job = 0; job < 20; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the workers are asleep by then
    expect_each_once(64, 1);
  }
}

TEST_P(ParallelFor, ANestedCallRunsInline) {
  std::atomic<std::size_t> inner{0};
  parallel_for(8, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const std::thread::id outer = std::this_thread::get_id();
      parallel_for(10, 1, [&](std::size_t ib, std::size_t ie) {
        EXPECT_EQ(std::this_thread::get_id(), outer);
        inner.fetch_add(ie - ib);
      });
    }
  });
  EXPECT_EQ(inner.load(), 80u);
}

TEST_P(ParallelFor, CallsFromSeveralThreadsAtOnceEachRunEveryItemOnce) {
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([] {
      for (int job = 0; job < 300; ++job) expect_each_once(33, 2);
    });
  for (auto& c : callers) c.join();
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelFor, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "Threads"; });

TEST(ParallelForResize, TheThreadCountChangesBetweenJobs) {
  for (int threads : {2, 4, 1, 3, 2}) {
    set_parallel_threads(threads);
    EXPECT_EQ(parallel_threads(), threads);
    expect_each_once(100, 3);
  }
  set_parallel_threads(1);
}

}  // namespace
}  // namespace tz
