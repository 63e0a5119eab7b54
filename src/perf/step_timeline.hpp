// A step on two streams, one computing and one communicating (the engine's model: a device runs the
// model's kernels in order; collectives run one at a time because they share the links).
//   compute tasks  run in list order; task i starts when task i-1 has ended and its conditions hold;
//   comm tasks     are ISSUED when their conditions hold and served one at a time in order of issue
//                  time (ties: list order);
//   conditions     "after the start of task X" and "after the end of task X" (any stream); a task
//                  without conditions is issued at time 0.
// perf/step_cost.cpp builds the step's tasks from the plan's schedule (docs/cost_model.md,
// "Overlap"): a gather for acquisition i is issued at the start of acquisition i - prefetch, a
// gradient reduction after the acquisition that completes the gradient, and the step boundary in
// the order of the engine (BoundaryMode).
// Exposure: while the compute stream waits, the comm stream is busy with some task (a compute task
// only waits for issued comm tasks, so one of them runs); each comm task's EXPOSED time is its busy
// time inside the compute stream's idle intervals.
#pragma once

#include <vector>

namespace tz::perf {

struct TimelineTask {
  enum class Stream { compute, comm } stream = Stream::compute;
  double seconds = 0;
  std::vector<int> after_start = {};  // tasks whose start this one waits for
  std::vector<int> after_end = {};    // tasks whose end this one waits for
};

struct Timeline {
  std::vector<double> issue_s, start_s, end_s;  // per task (issue = start for compute tasks)
  // Per task: comm tasks' busy time inside the compute stream's idle intervals, over the whole
  // timeline (0 for compute tasks).
  std::vector<double> exposed_s;
  // Per task: the task whose time decided its start (-1: none, it started at 0): the stream's
  // previous task (a compute task's predecessor in list order, a comm task's in the queue) when
  // the task waited for the stream, else the condition met last; `cause_at_start` when that was an
  // "after the start" condition (the start, not the end, of the cause).
  std::vector<int> cause;
  std::vector<bool> cause_at_start;
};

// Conditions must name other tasks; a cycle of conditions is an InternalError.
Timeline run_timeline(const std::vector<TimelineTask>& tasks);
// The exposure of each task counted only inside [begin, end) (one step's period of a timeline of
// several steps).
std::vector<double> exposure_in_window(const std::vector<TimelineTask>& tasks, const Timeline& timeline,
                                       double begin, double end);

}  // namespace tz::perf
