// The vocabulary of collectives, shared by the layers that run them (comm, quant), plan them (plan)
// and price them (perf): the kinds, and the bytes per rank one of them moves by the algorithmic
// convention nccl-tests uses (docs/algorithms.md):
//   all-gather, reduce-scatter: (p-1)/p x payload    (payload = the full, gathered / unreduced tensor)
//   all-reduce:                 2(p-1)/p x payload
//   all-to-all:                 (p-1)/p x payload    (payload = this rank's whole send buffer)
//   broadcast:                  payload              (0 if p == 1)
//   barrier:                    0
#pragma once

#include <cstdint>
#include <string_view>

namespace tz {

enum class CollectiveKind : std::uint8_t {
  all_gather,
  reduce_scatter,
  all_reduce,
  all_to_all,
  broadcast,
  barrier
};
std::string_view collective_name(CollectiveKind kind);

// Bytes per rank one collective of `payload_bytes` moves on a group of p ranks (formulas above).
double algorithmic_bytes(CollectiveKind kind, double payload_bytes, int p);

}  // namespace tz
