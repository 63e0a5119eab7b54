// Critical path of a two-stream timeline (critical_path.hpp): Timeline::cause, followed back.
#include "perf/critical_path.hpp"

#include <algorithm>
#include <cstddef>

#include "core/error.hpp"

namespace tz::perf {

std::vector<PathLink> critical_path(const std::vector<TimelineTask>& tasks, const Timeline& tl, int task,
                                    double begin) {
  TZ_CHECK(task >= 0 && task < static_cast<int>(tasks.size()), "task {} of {}", task, tasks.size());
  std::vector<PathLink> path;
  int cur = task;
  // A cause started before the task it caused (in the timeline's order of starts), so the walk ends.
  for (std::size_t guard = 0; guard <= tasks.size() && tl.start_s[cur] > begin; ++guard) {
    const int c = tl.cause[cur];
    if (c < 0) break;
    const double at = tl.cause_at_start[cur] ? tl.start_s[c] : tl.end_s[c];
    path.push_back({c, std::max(begin, tl.start_s[c]), at});
    cur = c;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace tz::perf
