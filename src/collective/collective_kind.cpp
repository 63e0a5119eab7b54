#include "collective/collective_kind.hpp"

namespace tz {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_to_all:
      return "all_to_all";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::barrier:
      return "barrier";
  }
  return "?";
}

double algorithmic_bytes(CollectiveKind kind, double payload_bytes, int p) {
  if (p <= 1) return 0;
  const double share = double(p - 1) / p;
  switch (kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return share * payload_bytes;
    case CollectiveKind::all_reduce:
      return 2 * share * payload_bytes;
    case CollectiveKind::broadcast:
      return payload_bytes;
    case CollectiveKind::barrier:
      return 0;
  }
  return 0;
}

}  // namespace tz
