// Shared-memory broadcast, for a group whose ranks share a host (SharedArena). Only the root writes,
// so each round uses the staging buffers of every rank of that round's parity: a round carries up to
// p * slot bytes, bytes [k*W + q*slot, k*W + (q+1)*slot) of the message (W = p * slot) in rank q's
// buffer. Round k (k = 0 .. ceil(bytes / W) - 1): the root copies its piece into those buffers (once
// every rank has read round g - 2) and publishes the round in its `written` counter; every other rank
// waits for it, copies the piece out and publishes the round in its `read` counter. The root runs up
// to two rounds ahead of the slowest reader (double buffering), so copying in and out overlap.
// Bytes per rank (convention): the payload. In memory the message is copied once in and once out
// per receiver (p * n in all), where a tree over shared-memory MPI copies it in and out at every
// hop (2 (p - 1) n) and each hop waits for its parent.
#include <algorithm>
#include <cstring>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"

namespace tz {

void broadcast_shared(Collective& c, SharedArena& arena, std::byte* buf, std::size_t bytes, int root) {
  const int p = c.size(), r = c.rank();
  if (p == 1) return;
  const std::size_t slot = arena.slot_bytes(), wide = slot * p;
  const std::size_t rounds = (bytes + wide - 1) / wide;
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::uint64_t g = arena.next_round();
    const std::size_t start = k * wide, end = std::min(bytes, start + wide);
    if (r == root)
      arena.wait_buffers_free(c, g);
    else
      arena.wait(c, root, SharedArena::Counter::written, g);
    for (int q = 0; q < p && start + q * slot < end; ++q) {
      const std::size_t off = start + q * slot, n = std::min(slot, end - off);
      if (r == root)
        std::memcpy(arena.buffer(q, g), buf + off, n);
      else
        std::memcpy(buf + off, arena.buffer(q, g), n);
    }
    if (r == root) arena.publish(c, SharedArena::Counter::written, g);
    arena.publish(c, SharedArena::Counter::read, g);
  }
}

}  // namespace tz
