// Shared-memory all-reduce, for a group whose ranks share a host (SharedArena): the shared
// reduce-scatter, then the shared all-gather in place, over the ring's even blocks
// (even_block_offsets), so any count works and send == recv is allowed, as for all_reduce_ring.
// Bytes per rank: 2(p-1)/p of the tensor, as the ring; in memory each contribution is copied into
// shared memory once and read once by its reducer, and each reduced block is copied in once and out
// once by every other rank, where the ring copies every partial sum at each of its 2(p-1) steps.
#include "comm/algorithms.hpp"

namespace tz {

void all_reduce_shared(Collective& c, SharedArena& arena, const std::byte* send, std::byte* recv,
                       std::size_t count, DType dtype) {
  const std::vector<std::size_t> off = even_block_offsets(count, c.size(), dtype_bytes(dtype));
  std::byte* mine = recv + off[c.rank()];
  reduce_scatter_shared(c, arena, send, mine, off, dtype);
  all_gather_shared(c, arena, mine, recv, off);
}

}  // namespace tz
