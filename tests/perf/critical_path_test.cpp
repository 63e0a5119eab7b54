// The critical path of a two-stream timeline (perf/critical_path.hpp) by hand: what a start waited
// for (the stream's previous task, a condition's end or start, the comm queue), and the path's
// times adding up to the window.
#include "perf/critical_path.hpp"

#include <gtest/gtest.h>

namespace tz::perf {
namespace {

using S = TimelineTask::Stream;

std::vector<int> tasks_of(const std::vector<PathLink>& path) {
  std::vector<int> out;
  for (const auto& l : path) out.push_back(l.task);
  return out;
}

double total(const std::vector<PathLink>& path) {
  double t = 0;
  for (const auto& l : path) t += l.to_s - l.from_s;
  return t;
}

// A gather (comm 2 s) the first compute waits for; the second compute follows the first.
TEST(CriticalPath, AComputeWaitsForAGatherThenForTheComputeBeforeIt) {
  const std::vector<TimelineTask> tasks = {
      {.stream = S::comm, .seconds = 2},
      {.stream = S::compute, .seconds = 1, .after_end = {0}},
      {.stream = S::compute, .seconds = 1},
  };
  const Timeline tl = run_timeline(tasks);
  const auto path = critical_path(tasks, tl, 2, 0);
  ASSERT_EQ(tasks_of(path), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(path[0].from_s, 0);
  EXPECT_DOUBLE_EQ(path[0].to_s, 2);
  EXPECT_DOUBLE_EQ(path[1].from_s, 2);
  EXPECT_DOUBLE_EQ(path[1].to_s, 3);
  EXPECT_DOUBLE_EQ(total(path), tl.start_s[2]);
}

// Two gathers queued on the comm stream: the second waits for the first to leave the links, and
// the compute that needs the second waits for it: the path runs through the queue.
TEST(CriticalPath, AQueuedCollectiveWaitsForTheOneServedBeforeIt) {
  const std::vector<TimelineTask> tasks = {
      {.stream = S::compute, .seconds = 0.5},                  // 0: issues both gathers at its start
      {.stream = S::comm, .seconds = 1, .after_start = {0}},   // 1
      {.stream = S::comm, .seconds = 3, .after_start = {0}},   // 2: queued behind 1
      {.stream = S::compute, .seconds = 1, .after_end = {2}},  // 3
  };
  const Timeline tl = run_timeline(tasks);
  ASSERT_DOUBLE_EQ(tl.start_s[3], 4);
  const auto path = critical_path(tasks, tl, 3, 0);
  // 2 started when 1 ended (the queue); 1 at time 0, where the path begins.
  ASSERT_EQ(tasks_of(path), (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(path[0].to_s - path[0].from_s, 1);
  EXPECT_DOUBLE_EQ(path[1].to_s - path[1].from_s, 3);
  EXPECT_DOUBLE_EQ(total(path), 4);
  EXPECT_EQ(tl.cause[2], 1);
  EXPECT_FALSE(tl.cause_at_start[2]);
  EXPECT_EQ(tl.cause[1], 0) << "issued at the start of 0";
  EXPECT_TRUE(tl.cause_at_start[1]);
}

// Overlapped communication is off the path: a gather that ends before the compute before it.
TEST(CriticalPath, HiddenCommunicationIsNotOnThePath) {
  const std::vector<TimelineTask> tasks = {
      {.stream = S::compute, .seconds = 2},                    // 0
      {.stream = S::comm, .seconds = 1, .after_start = {0}},   // 1: hidden behind 0
      {.stream = S::compute, .seconds = 2, .after_end = {1}},  // 2
      {.stream = S::compute, .seconds = 1},                    // 3
  };
  const Timeline tl = run_timeline(tasks);
  const auto path = critical_path(tasks, tl, 3, 0);
  EXPECT_EQ(tasks_of(path), (std::vector<int>{0, 2}));
  EXPECT_DOUBLE_EQ(total(path), 4);
}

// A window that starts mid-task: the first link is clipped at `begin`, so the path adds up to the
// window.
TEST(CriticalPath, ClippedAtTheWindowsBeginning) {
  const std::vector<TimelineTask> tasks = {
      {.stream = S::compute, .seconds = 3},
      {.stream = S::comm, .seconds = 2, .after_end = {0}},
      {.stream = S::compute, .seconds = 1, .after_end = {1}},
  };
  const Timeline tl = run_timeline(tasks);
  const auto path = critical_path(tasks, tl, 2, 1.5);
  EXPECT_EQ(tasks_of(path), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(path[0].from_s, 1.5);
  EXPECT_DOUBLE_EQ(total(path), tl.start_s[2] - 1.5);
}

}  // namespace
}  // namespace tz::perf
