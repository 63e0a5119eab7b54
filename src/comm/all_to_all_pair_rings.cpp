// Shared-memory all-to-all with flow control per (source, destination) pair, for a group whose
// ranks share a host (SharedArena). A rank's two staging buffers are cut into p - 1 rings, one per
// destination, each of `depth` chunks (pair_ring_shape). The arena keeps, per ordered pair, a
// `filled` counter (chunks the source has put in its ring for that destination) and a `freed`
// counter (chunks the destination has copied out); both only grow, over every call on the arena,
// so chunk number s of a pair always lives in slot s % depth of its ring. A rank loops over its
// peers: it copies the next chunk of its block for j into j's ring as soon as that ring has a free
// slot (filled - freed < depth) and copies chunks out of q's ring for it as soon as q has filled
// them, publishing each chunk; with nothing to do it sleeps on its doorbell, which a peer rings
// after each publication that concerns it. No step waits for the whole group: a slow pair only
// holds up its own two ranks, and a rank whose peers are all ahead never waits at all. So a sender
// may be several calls ahead of a receiver: each block's length and call travel in a header keyed by
// its first chunk (SharedArena::set_pair_block), which the receiver checks against its own offsets
// before it takes the block, so blocks the ranks disagree on are reported, never mixed up.
//
// Between the pair-ring call and the arena's round-based collectives the usual rules hold: the
// call takes two rounds (both staging buffers), waits, when another collective used the arena
// since the last pair-ring call, until every rank has read round g - 1 (rule 1 for both buffers),
// and publishes `written` and `read` for its last round at the end, once it has copied out all it
// receives. Back-to-back pair-ring calls skip that wait: the pair counters already order every
// write of a slot after the read of its previous chunk.
// Bytes per rank: the ledger's (p-1)/p of the send buffer; in memory each block is copied in and
// out once, as by the round-based staging, chunk by chunk while the chunk is still in cache.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "core/error.hpp"

namespace tz {

PairRingShape pair_ring_shape(std::size_t staging_bytes, int p) {
  // The arena gives every rank at least 16 bytes of staging per rank, so a ring holds two chunks.
  const std::size_t ring = staging_bytes / std::max(p - 1, 1);
  // At most as deep as the arena keeps block headers (SharedArena::set_pair_block).
  const std::size_t depth =
      std::clamp<std::size_t>(ring / kPairRingChunkBytes, 2, SharedArena::kPairBlockSlots);
  const std::size_t chunk = ring / depth;
  return {.chunk_bytes = chunk >= 64 ? chunk / 64 * 64 : std::max<std::size_t>(chunk, 1), .depth = depth};
}

namespace {

// One direction of one pair in this call: the block's bytes, how far it has got, and the number
// (over the arena's life) of its next chunk.
struct PairFlow {
  int peer = 0;
  const std::byte* from = nullptr;  // this rank's block (sends)
  std::byte* to = nullptr;          // its place in the output (receives)
  std::size_t bytes = 0, done = 0;
  std::uint64_t next_chunk = 0;
  bool finished() const { return done == bytes; }
};

// The header of the block a receive's next chunk starts: it must be this call's block, start at
// that chunk and be as long as expected. Blocks the ranks disagree on show here: a length that
// differs, or (a block the sender left empty or sent longer than expected) a chunk that starts a
// block of another call or none.
void check_block(const Collective& c, const SharedArena::PairBlock& block, const PairFlow& f,
                 std::uint64_t call) {
  if (block.call != call || block.first_chunk != f.next_chunk)
    throw CommError(
        fmt::format("{}: rank {} sends no block in this call where {} bytes are expected (the "
                    "ranks disagree on which blocks are empty or how long they are)",
                    c.describe(), f.peer, f.bytes));
  if (block.bytes != f.bytes)
    throw CommError(fmt::format("{}: rank {} sends {} bytes where {} are expected", c.describe(), f.peer,
                                block.bytes, f.bytes));
}

}  // namespace

void all_to_all_pair_rings(Collective& c, SharedArena& arena, const std::byte* send,
                           std::span<const std::size_t> send_offsets, std::byte* recv,
                           std::span<const std::size_t> recv_offsets) {
  const int p = c.size(), r = c.rank();
  if (const std::size_t own = send_offsets[r + 1] - send_offsets[r]; own > 0)
    std::memcpy(recv + recv_offsets[r], send + send_offsets[r], own);
  if (p == 1) return;
  using PC = SharedArena::PairCounter;
  const std::uint64_t call = arena.pair_calls();
  const bool chained = arena.follows_pair_call();
  arena.next_round();
  const std::uint64_t last_round = arena.next_round();
  if (!chained) arena.wait_buffers_free(c, last_round);  // both buffers: every rank has read g - 1

  const PairRingShape shape = pair_ring_shape(2 * arena.slot_bytes(), p);
  const std::size_t ring_bytes = shape.chunk_bytes * shape.depth;
  // Where chunk `chunk` from rank `from` to rank `to` lives (in `from`'s staging buffers).
  auto slot = [&](int from, int to, std::uint64_t chunk) {
    const std::size_t ring = static_cast<std::size_t>((to - from - 1 + p) % p);
    return arena.staging(from) + ring * ring_bytes + (chunk % shape.depth) * shape.chunk_bytes;
  };

  std::vector<PairFlow> sends, recvs;
  for (int k = 1; k < p; ++k) {  // rotated: no common first destination or source
    const int j = (r + k) % p, q = (r - k + p) % p;
    const std::size_t out = send_offsets[j + 1] - send_offsets[j], in = recv_offsets[q + 1] - recv_offsets[q];
    if (out > 0)
      sends.push_back({.peer = j,
                       .from = send + send_offsets[j],
                       .bytes = out,
                       .next_chunk = arena.pair_value(r, j, PC::filled)});
    if (in > 0)
      recvs.push_back({.peer = q,
                       .to = recv + recv_offsets[q],
                       .bytes = in,
                       .next_chunk = arena.pair_value(q, r, PC::freed)});
  }

  for (;;) {
    const std::uint64_t seen = arena.doorbell();  // before the checks: a later publication changes it
    bool progress = false, pending = false;
    for (PairFlow& f : sends) {
      if (f.finished()) continue;
      const std::uint64_t freed = arena.pair_value(r, f.peer, PC::freed);
      while (!f.finished() && f.next_chunk - freed < shape.depth) {
        const std::size_t n = std::min(shape.chunk_bytes, f.bytes - f.done);
        // Published with the chunk (filled is a seq_cst store).
        if (f.done == 0)
          arena.set_pair_block(r, f.peer, {.call = call, .first_chunk = f.next_chunk, .bytes = f.bytes});
        std::memcpy(slot(r, f.peer, f.next_chunk), f.from + f.done, n);
        f.done += n;
        arena.pair_publish(c, r, f.peer, PC::filled, ++f.next_chunk);
        progress = true;
      }
      pending = pending || !f.finished();
    }
    for (PairFlow& f : recvs) {
      if (f.finished()) continue;
      const std::uint64_t filled = arena.pair_value(f.peer, r, PC::filled);
      if (f.done == 0 && filled > f.next_chunk) {
        c.transport().inject_delay();  // between seeing the counter and reading (delay injection)
        check_block(c, arena.pair_block(f.peer, r, f.next_chunk), f, call);
      }
      while (!f.finished() && f.next_chunk < filled) {
        const std::size_t n = std::min(shape.chunk_bytes, f.bytes - f.done);
        std::memcpy(f.to + f.done, slot(f.peer, r, f.next_chunk), n);
        f.done += n;
        arena.pair_publish(c, f.peer, r, PC::freed, ++f.next_chunk);
        progress = true;
      }
      pending = pending || !f.finished();
    }
    if (!pending) break;
    if (!progress && !arena.wait_doorbell(c, seen)) {
      std::vector<int> behind;
      for (const auto* flows : {&sends, &recvs})
        for (const PairFlow& f : *flows)
          if (!f.finished() && std::find(behind.begin(), behind.end(), f.peer) == behind.end())
            behind.push_back(f.peer);
      std::sort(behind.begin(), behind.end());
      c.fail_not_arrived(behind);
    }
  }
  arena.publish(c, SharedArena::Counter::written, last_round);
  arena.publish(c, SharedArena::Counter::read, last_round);
  arena.end_pair_call();
}

}  // namespace tz
