// The critical path of a timeline (perf/step_timeline.hpp): the chain of tasks that decided when a
// given task started (Timeline::cause), followed back to a time. Each task of the chain starts as
// its predecessor's end (or start, for an "after the start" condition) allows: a compute task waits
// for the compute task before it or for one of its conditions; a comm task for its conditions (its
// issue) or for the comm task served before it. The links' intervals tile [begin, the task's
// start], so their times add up to it exactly: over one step's period, to the step time.
#pragma once

#include <vector>

#include "perf/step_timeline.hpp"

namespace tz::perf {

struct PathLink {
  int task = -1;
  double from_s = 0;  // the part of the task on the path: [from_s, to_s), clipped at `begin`
  double to_s = 0;
};

// The chain ending at `task`'s start, earliest first; it stops at `begin` (or at a task that waited
// for nothing). Ties prefer the stream's own predecessor (no wait), then the first condition listed.
std::vector<PathLink> critical_path(const std::vector<TimelineTask>& tasks, const Timeline& timeline,
                                    int task, double begin);

}  // namespace tz::perf
