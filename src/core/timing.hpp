// Wall-clock timing shared by the benchmarks, the reports and the checkpoint I/O: seconds on the
// steady clock (never the system clock, which may jump), and the median of repeated measurements
// (what every benchmark reports: one descheduled repeat on a shared machine moves a mean, not it),
// and the process's CPU time beside them.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace tz {

// Seconds on the steady clock since t0.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds that one call of fn takes.
template <typename Fn>
double seconds_of(Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return seconds_since(t0);
}

// CPU seconds the whole process has used (every thread), for figures that set the CPU a piece of
// work costs beside its wall time.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The median of the samples: the upper of the two middle ones for an even count; 0 for none.
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const auto mid = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), mid, samples.end());
  return *mid;
}

}  // namespace tz
