// The two-stream timeline (perf/step_timeline.hpp) against the overlap model it generalizes
// (perf/overlap_schedule.hpp, the reference: gathers issued at the start of acquisition i - prefetch,
// reductions after their acquisition), on random steps; and its exposure accounting by hand.
#include "perf/step_timeline.hpp"

#include <gtest/gtest.h>

#include <random>

#include "perf/overlap_schedule.hpp"

namespace tz::perf {
namespace {

// The tasks the cost model builds for a pass: computes in order, then the comm items in list order.
std::vector<TimelineTask> pass_tasks(const std::vector<double>& compute, const std::vector<CommItem>& comm,
                                     int prefetch) {
  std::vector<TimelineTask> tasks;
  for (double c : compute) tasks.push_back({.stream = TimelineTask::Stream::compute, .seconds = c});
  for (const auto& item : comm) {
    TimelineTask t{.stream = TimelineTask::Stream::comm, .seconds = item.seconds};
    const int id = static_cast<int>(tasks.size());
    if (item.kind == CommItem::Kind::gather) {
      if (prefetch == 0 && item.acquisition > 0) t.after_end.push_back(item.acquisition - 1);
      if (prefetch > 0 && item.acquisition - prefetch > 0)
        t.after_start.push_back(item.acquisition - prefetch);
      tasks[item.acquisition].after_end.push_back(id);
    } else {
      t.after_end.push_back(item.acquisition);
    }
    tasks.push_back(t);
  }
  return tasks;
}

TEST(StepTimeline, ReproducesTheOverlapModelOnRandomPasses) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dur(0.1, 3.0);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    const int prefetch = 1 + static_cast<int>(rng() % 3);  // the reference needs prefetch >= 1
    std::vector<double> compute;
    for (int i = 0; i < n; ++i) compute.push_back(dur(rng));
    std::vector<CommItem> comm;
    for (int i = 0; i < n; ++i) {  // in acquisition order: a gather before, maybe a reduction after
      if (rng() % 3 != 0) comm.push_back({CommItem::Kind::gather, i, dur(rng)});
      if (rng() % 2 == 0) comm.push_back({CommItem::Kind::reduce, i, dur(rng)});
    }
    const OverlapResult ref = schedule_overlap(compute, comm, prefetch, true);
    const Timeline tl = run_timeline(pass_tasks(compute, comm, prefetch));
    double end = 0, exposed = 0;
    for (std::size_t i = 0; i < tl.end_s.size(); ++i)
      end = std::max(end, tl.end_s[i]), exposed += tl.exposed_s[i];
    ASSERT_NEAR(end, ref.total_s, 1e-12 * ref.total_s) << "trial " << trial;
    // The compute stream's idle time is all covered by comm busy time.
    ASSERT_NEAR(exposed, ref.total_s - ref.compute_s, 1e-9) << "trial " << trial;
  }
}

TEST(StepTimeline, NoPrefetchIssuesEachGatherWhenThePreviousAcquisitionEnds) {
  // prefetch 0: g_i is issued when c_{i-1} ends, so nothing overlaps: 1 + 2 + 1 + 2 = 6.
  const std::vector<double> compute = {2, 2};
  const std::vector<CommItem> comm = {{CommItem::Kind::gather, 0, 1}, {CommItem::Kind::gather, 1, 1}};
  const Timeline tl = run_timeline(pass_tasks(compute, comm, 0));
  EXPECT_DOUBLE_EQ(tl.end_s[1], 6);
  EXPECT_DOUBLE_EQ(tl.start_s[3], 3);
}

TEST(StepTimeline, ExposureByHandAndWindow) {
  // compute c0 (1 s) waits gather g (2 s, issued at 0); reduction r (3 s) after c0; a final sentinel
  // s (0 s) waits r. Timeline: g [0,2], c0 [2,3], r [3,6], s [6,6]. Idle: [0,2] (g) and [3,6] (r).
  std::vector<TimelineTask> t(4);
  t[0] = {.stream = TimelineTask::Stream::compute, .seconds = 1, .after_end = {1}};
  t[1] = {.stream = TimelineTask::Stream::comm, .seconds = 2};
  t[2] = {.stream = TimelineTask::Stream::comm, .seconds = 3, .after_end = {0}};
  t[3] = {.stream = TimelineTask::Stream::compute, .seconds = 0, .after_end = {2}};
  const Timeline tl = run_timeline(t);
  EXPECT_DOUBLE_EQ(tl.start_s[0], 2);
  EXPECT_DOUBLE_EQ(tl.issue_s[2], 3);
  EXPECT_DOUBLE_EQ(tl.end_s[3], 6);
  EXPECT_DOUBLE_EQ(tl.exposed_s[1], 2);
  EXPECT_DOUBLE_EQ(tl.exposed_s[2], 3);
  const std::vector<double> w = exposure_in_window(t, tl, 1.5, 4);  // only [1.5, 2] and [3, 4] count
  EXPECT_DOUBLE_EQ(w[1], 0.5);
  EXPECT_DOUBLE_EQ(w[2], 1);
  // Issue order: two comm tasks issued at the same time run in list order; an earlier issue wins.
  std::vector<TimelineTask> q(3);
  q[0] = {.stream = TimelineTask::Stream::compute, .seconds = 1};
  q[1] = {.stream = TimelineTask::Stream::comm, .seconds = 1, .after_end = {0}};
  q[2] = {.stream = TimelineTask::Stream::comm, .seconds = 1, .after_end = {0}};
  const Timeline o = run_timeline(q);
  EXPECT_DOUBLE_EQ(o.start_s[1], 1);
  EXPECT_DOUBLE_EQ(o.start_s[2], 2);
}

TEST(StepTimeline, ACycleIsAnInternalError) {
  std::vector<TimelineTask> t(2);
  t[0] = {.stream = TimelineTask::Stream::comm, .seconds = 1, .after_end = {1}};
  t[1] = {.stream = TimelineTask::Stream::comm, .seconds = 1, .after_end = {0}};
  EXPECT_ANY_THROW(run_timeline(t));
}

}  // namespace
}  // namespace tz::perf
