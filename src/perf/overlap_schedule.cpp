#include "perf/overlap_schedule.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz::perf {

OverlapResult schedule_serial_ref(const std::vector<double>& compute_s, const std::vector<CommItem>& comm) {
  OverlapResult r;
  for (double c : compute_s) r.compute_s += c;
  for (const auto& c : comm) r.comm_s += c.seconds;
  r.total_s = r.compute_s + r.comm_s;
  return r;
}

OverlapResult schedule_overlap(const std::vector<double>& compute_s, const std::vector<CommItem>& comm,
                               int prefetch_depth, bool overlap) {
  if (!overlap) return schedule_serial_ref(compute_s, comm);
  const int n = static_cast<int>(compute_s.size());
  std::vector<double> gather_end(n, 0.0), start(n, 0.0), end(n, 0.0);
  std::vector<bool> gather_pending(n, false);
  for (const auto& c : comm) {
    TZ_CHECK(c.acquisition >= 0 && c.acquisition < n, "acquisition {} of {}", c.acquisition, n);
    if (c.kind == CommItem::Kind::gather) gather_pending[c.acquisition] = true;
  }
  int computed = 0;  // acquisitions [0, computed) have start/end
  auto compute_up_to = [&](int k) {
    for (; computed <= k && computed < n; ++computed) {
      TZ_CHECK(!gather_pending[computed], "acquisition {} computed before its gather was issued", computed);
      const double ready = computed == 0 ? 0.0 : end[computed - 1];
      start[computed] = std::max(ready, gather_end[computed]);
      end[computed] = start[computed] + compute_s[computed];
    }
  };
  // The comm stream takes items in order of issue time. Gathers and reductions keep their own
  // list order; a reduction's issue time is known only once its acquisition can be computed, i.e.
  // once every gather up to it has been placed.
  std::vector<std::size_t> gathers, reduces;
  for (std::size_t i = 0; i < comm.size(); ++i)
    (comm[i].kind == CommItem::Kind::gather ? gathers : reduces).push_back(i);
  auto gather_issue = [&](const CommItem& c) {
    const int trigger = c.acquisition - prefetch_depth;
    if (trigger <= 0) return 0.0;
    compute_up_to(trigger);
    return start[trigger];
  };
  auto reduce_ready = [&](const CommItem& c) {
    for (int a = computed; a <= c.acquisition; ++a)
      if (gather_pending[a]) return false;
    return true;
  };
  double comm_free = 0;
  OverlapResult r;
  std::size_t gi = 0, ri = 0;
  while (gi < gathers.size() || ri < reduces.size()) {
    bool take_gather = ri >= reduces.size();
    double issue = 0;
    if (!take_gather) {
      const CommItem& red = comm[reduces[ri]];
      if (gi < gathers.size() && !reduce_ready(red)) {
        take_gather = true;
      } else {
        compute_up_to(red.acquisition);
        issue = end[red.acquisition];
        if (gi < gathers.size()) {
          const double g = gather_issue(comm[gathers[gi]]);
          if (g < issue || (g == issue && gathers[gi] < reduces[ri])) take_gather = true;
        }
      }
    }
    const CommItem& c = comm[take_gather ? gathers[gi++] : reduces[ri++]];
    if (take_gather) issue = gather_issue(c);
    const double begin = std::max(comm_free, issue);
    comm_free = begin + c.seconds;
    if (take_gather) {
      gather_end[c.acquisition] = std::max(gather_end[c.acquisition], comm_free);
      gather_pending[c.acquisition] = false;
    }
    r.comm_s += c.seconds;
  }
  compute_up_to(n - 1);
  for (double c : compute_s) r.compute_s += c;
  r.total_s = std::max(n > 0 ? end[n - 1] : 0.0, comm_free);
  return r;
}

}  // namespace tz::perf
