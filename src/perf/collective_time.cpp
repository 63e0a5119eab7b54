#include "perf/collective_time.hpp"

#include "core/error.hpp"

namespace tz::perf {

int algorithm_steps(CollectiveKind kind, int p) {
  if (p <= 1) return 0;
  switch (kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      return p - 1;
    case CollectiveKind::all_reduce:
      return 2 * (p - 1);
    case CollectiveKind::all_to_all:
      return 1;
    default:
      break;
  }
  TZ_CHECK(false, "no closed form for collective {}", collective_name(kind));
  return 0;
}

double collective_time_s(CollectiveKind kind, double payload_bytes, int p, const LinkParams& link) {
  if (p <= 1) return 0;
  const double alpha = link.latency_us * 1e-6;
  const double block_wire = payload_bytes / p / (link.bandwidth_GBps * 1e9);
  const double block_reduce = link.reduce_GBps > 0 ? payload_bytes / p / (link.reduce_GBps * 1e9) : 0.0;
  switch (kind) {
    case CollectiveKind::all_gather:
      return (p - 1) * (alpha + block_wire);
    case CollectiveKind::reduce_scatter:
      return (p - 1) * (alpha + block_wire + block_reduce);
    case CollectiveKind::all_reduce:
      return 2 * (p - 1) * (alpha + block_wire) + (p - 1) * block_reduce;
    case CollectiveKind::all_to_all:
      return alpha + (p - 1) * block_wire;
    default:
      break;
  }
  TZ_CHECK(false, "no closed form for collective {}", collective_name(kind));
  return 0;
}

}  // namespace tz::perf
