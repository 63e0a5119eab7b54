// Two-stream timeline (step_timeline.hpp). Event order: the next compute task starts as soon as it
// is ready; the comm stream takes the issued task with the smallest (issue time, index) when it is
// free. When a compute start and a comm start fall at the same instant the compute task goes first,
// so that what its start issues competes for the comm stream at that instant (ties by list order).
#include "perf/step_timeline.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "core/error.hpp"

namespace tz::perf {

Timeline run_timeline(const std::vector<TimelineTask>& tasks) {
  const int n = static_cast<int>(tasks.size());
  constexpr double kNever = std::numeric_limits<double>::infinity();
  Timeline tl;
  tl.issue_s.assign(n, 0.0);
  tl.start_s.assign(n, kNever);
  tl.end_s.assign(n, kNever);
  tl.exposed_s.assign(n, 0.0);
  tl.cause.assign(n, -1);
  tl.cause_at_start.assign(n, false);

  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> dependents(n);
  for (int i = 0; i < n; ++i) {
    for (const auto* list : {&tasks[i].after_start, &tasks[i].after_end})
      for (int d : *list) {
        TZ_CHECK(d >= 0 && d < n && d != i, "task {} waits for task {} of {}", i, d, n);
        ++pending[i];
        dependents[d].push_back(i);
      }
  }
  auto condition_time = [&](int i) {
    double t = 0;
    for (int d : tasks[i].after_start) t = std::max(t, tl.start_s[d]);
    for (int d : tasks[i].after_end) t = std::max(t, tl.end_s[d]);
    return t;
  };
  std::vector<int> computes;
  for (int i = 0; i < n; ++i)
    if (tasks[i].stream == TimelineTask::Stream::compute) computes.push_back(i);
  std::set<std::pair<double, int>> issued;  // comm tasks ready to run: (issue time, index)
  for (int i = 0; i < n; ++i)
    if (tasks[i].stream == TimelineTask::Stream::comm && pending[i] == 0) issued.insert({0.0, i});

  // What decided task i's start at t: the stream's previous task `prev` when it ended at t (and
  // t is later than the conditions allowed), else the condition met last.
  auto record_cause = [&](int i, double t, int prev, double conditions_s) {
    if (prev >= 0 && tl.end_s[prev] == t && t >= conditions_s) {
      tl.cause[i] = prev;
      return;
    }
    for (int d : tasks[i].after_end)
      if (tl.end_s[d] == conditions_s) tl.cause[i] = d;
    for (int d : tasks[i].after_start)
      if (tl.cause[i] < 0 && tl.start_s[d] == conditions_s) tl.cause[i] = d, tl.cause_at_start[i] = true;
  };
  int last_compute = -1, last_comm = -1;

  auto start = [&](int i, double t) {
    tl.start_s[i] = t;
    tl.end_s[i] = t + tasks[i].seconds;
    if (tasks[i].stream == TimelineTask::Stream::compute) tl.issue_s[i] = t;
    for (int d : dependents[i])
      if (--pending[d] == 0 && tasks[d].stream == TimelineTask::Stream::comm) {
        tl.issue_s[d] = condition_time(d);
        issued.insert({tl.issue_s[d], d});
      }
  };

  std::size_t next_compute = 0;
  double compute_free = 0, comm_free = 0;
  int started = 0;
  while (started < n) {
    double tc = kNever;
    if (next_compute < computes.size() && pending[computes[next_compute]] == 0)
      tc = std::max(compute_free, condition_time(computes[next_compute]));
    double tk = kNever;
    if (!issued.empty()) tk = std::max(comm_free, issued.begin()->first);
    TZ_CHECK(tc < kNever || tk < kNever, "timeline: {} of {} tasks can never start (a cycle of conditions)",
             n - started, n);
    if (tc <= tk) {
      const int i = computes[next_compute++];
      start(i, tc);
      record_cause(i, tc, last_compute, condition_time(i));
      compute_free = tl.end_s[i];
      last_compute = i;
    } else {
      const int i = issued.begin()->second;
      issued.erase(issued.begin());
      start(i, tk);
      record_cause(i, tk, last_comm, tl.issue_s[i]);
      comm_free = tl.end_s[i];
      last_comm = i;
    }
    ++started;
  }

  double last = 0;
  for (int i = 0; i < n; ++i) last = std::max(last, tl.end_s[i]);
  tl.exposed_s = exposure_in_window(tasks, tl, 0, last);
  return tl;
}

std::vector<double> exposure_in_window(const std::vector<TimelineTask>& tasks, const Timeline& tl,
                                       double begin, double end) {
  // Exposure: comm busy time inside the compute stream's idle intervals (clipped to the window).
  const int n = static_cast<int>(tasks.size());
  std::vector<double> exposed(n, 0.0);
  double last = 0;
  for (int i = 0; i < n; ++i) last = std::max(last, tl.end_s[i]);
  std::vector<int> computes;
  for (int i = 0; i < n; ++i)
    if (tasks[i].stream == TimelineTask::Stream::compute) computes.push_back(i);
  std::vector<std::pair<double, double>> idle;
  double prev = 0;
  for (int i : computes) {
    if (tl.start_s[i] > prev) idle.push_back({prev, tl.start_s[i]});
    prev = tl.end_s[i];
  }
  if (last > prev) idle.push_back({prev, last});
  for (auto& [a, b] : idle) a = std::max(a, begin), b = std::min(b, end);
  std::vector<int> comms;
  for (int i = 0; i < n; ++i)
    if (tasks[i].stream == TimelineTask::Stream::comm) comms.push_back(i);
  std::sort(comms.begin(), comms.end(), [&](int a, int b) { return tl.start_s[a] < tl.start_s[b]; });
  std::size_t j = 0;
  for (int k : comms) {
    const double a = tl.start_s[k], b = tl.end_s[k];
    while (j < idle.size() && idle[j].second <= a) ++j;
    for (std::size_t m = j; m < idle.size() && idle[m].first < b; ++m)
      exposed[k] += std::max(0.0, std::min(b, idle[m].second) - std::max(a, idle[m].first));
  }
  return exposed;
}

}  // namespace tz::perf
