// Ring all-reduce = ring reduce-scatter + ring all-gather (Patarasuk and Yuan's bandwidth-optimal
// composition). The count is cut into p blocks as evenly as possible (the first count % p blocks one
// element longer), so any count works, including 0 and counts below p. Rank r reduces block r into
// its place in `recv`, then the all-gather spreads the reduced blocks in place. send == recv works:
// the reduce-scatter reads block b of `send` only before it writes block r of `recv`.
// Bytes per rank: 2(p-1)/p of the tensor (half in each phase), on the group's tier.
#include <cstring>

#include "comm/algorithms.hpp"

namespace tz {

void all_reduce_ring(Collective& c, const std::byte* send, std::byte* recv, std::size_t count, DType dtype) {
  const int p = c.size(), r = c.rank();
  const std::size_t bytes = count * dtype_bytes(dtype);
  if (p == 1) {
    if (send != recv && bytes > 0) std::memcpy(recv, send, bytes);
    return;
  }
  const std::vector<std::size_t> off = even_block_offsets(count, p, dtype_bytes(dtype));
  reduce_scatter_ring(c, send, recv + off[r], off, dtype);
  all_gather_ring(c, recv + off[r], recv, off);
}

}  // namespace tz
