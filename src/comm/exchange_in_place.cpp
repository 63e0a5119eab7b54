// Single-copy exchange (algorithms.hpp), one round of the arena: offer, publish `written`; read what
// each peer offers as soon as it has published (ready ones first), publish `read`; then wait until
// every peer has read, since the offered memory is the caller's again once this returns. A rank's
// offers are rewritten only by its next exchange, after that wait, so no wait is needed before.
// Bytes per rank: the same as the staged algorithms'; in memory every block is copied once, by the
// kernel (process_vm_readv), where staging copies it in and out.
#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"

namespace tz {

void exchange_in_place(Collective& c, SharedArena& arena,
                       const std::function<std::span<const std::byte>(int to)>& offer,
                       const std::function<std::span<std::byte>(int from)>& into) {
  const int p = c.size(), r = c.rank();
  const std::uint64_t g = arena.next_round();
  for (int j = 0; j < p; ++j)
    if (j != r) arena.offer_block(j, offer(j));
  arena.publish(c, SharedArena::Counter::written, g);
  arena.drain(c, g, [&](int q) { arena.read_offered(c, q, into(q)); });
  arena.publish(c, SharedArena::Counter::read, g);
  arena.wait_peers(c, SharedArena::Counter::read, g);
}

}  // namespace tz
