// Shared-memory all-to-all, for a group whose ranks share a host (SharedArena): in place where the
// arena allows its ranks to read each other's memory (exchange_in_place), else in rounds
// (all_to_all_rounds), as follows. Each rank's staging
// buffer is cut into p - 1 pieces of `piece` = slot / (p - 1) bytes (rounded down to 64 bytes), one per
// destination: piece (j - r - 1) mod p of rank r's buffer carries data for rank j. Round k of the
// collective (k = 0 .. ceil(largest block / piece) - 1, the largest block of any rank, so every rank
// runs the same rounds): each rank copies bytes [k*piece, (k+1)*piece) of every block it sends into
// that block's piece of its staging buffer and publishes the round in its `written` counter; it then
// copies its own piece out of every other rank's buffer as soon as that rank has published, in
// whatever order they become ready, and publishes the round in its `read` counter. Its own block is a
// local copy. Staging buffers alternate by round (a rank writes round g once all have read g - 2).
// Bytes per rank: the ledger's (p-1)/p of the send buffer, as for the pairwise exchange; in memory
// each block is copied once in and once out, with one publication per round instead of a message
// (and Open MPI's fragment handshakes) per block.
#include <algorithm>
#include <cstring>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"

namespace tz {

SharedAllToAll resolve_shared_all_to_all(SharedAllToAll asked, const SharedArena& arena) {
  switch (asked) {
    case SharedAllToAll::automatic:
      return arena.crowded() ? SharedAllToAll::rounds : SharedAllToAll::pair_rings;
    case SharedAllToAll::in_place:
      return arena.cross_memory() ? SharedAllToAll::in_place : SharedAllToAll::rounds;
    default:
      return asked;
  }
}

std::size_t shared_piece_bytes(std::size_t slot_bytes, int p, std::size_t elem_bytes) {
  const std::size_t share = slot_bytes / std::max(p - 1, 1);
  return share >= 64 ? share / 64 * 64 : std::max(share / elem_bytes, std::size_t{1}) * elem_bytes;
}

void all_to_all_shared(Collective& c, SharedArena& arena, const std::byte* send,
                       std::span<const std::size_t> send_offsets, std::byte* recv,
                       std::span<const std::size_t> recv_offsets, std::size_t max_block_bytes) {
  if (!arena.cross_memory())
    return all_to_all_rounds(c, arena, send, send_offsets, recv, recv_offsets, max_block_bytes);
  const int p = c.size(), r = c.rank();
  if (const std::size_t own = send_offsets[r + 1] - send_offsets[r]; own > 0)
    std::memcpy(recv + recv_offsets[r], send + send_offsets[r], own);
  if (p == 1) return;
  // Each block has exactly one reader: one copy, by the kernel.
  exchange_in_place(
      c, arena,
      [&](int j) { return std::span(send + send_offsets[j], send_offsets[j + 1] - send_offsets[j]); },
      [&](int q) { return std::span(recv + recv_offsets[q], recv_offsets[q + 1] - recv_offsets[q]); });
}

void all_to_all_rounds(Collective& c, SharedArena& arena, const std::byte* send,
                       std::span<const std::size_t> send_offsets, std::byte* recv,
                       std::span<const std::size_t> recv_offsets, std::size_t max_block_bytes) {
  const int p = c.size(), r = c.rank();
  if (const std::size_t own = send_offsets[r + 1] - send_offsets[r]; own > 0)
    std::memcpy(recv + recv_offsets[r], send + send_offsets[r], own);
  if (p == 1) return;
  const std::size_t piece = shared_piece_bytes(arena.slot_bytes(), p, 1);
  // Where rank `from` keeps the data for rank `to` in its staging buffer.
  auto slot_of = [&](int from, int to) { return static_cast<std::size_t>((to - from - 1 + p) % p) * piece; };
  auto piece_len = [&](std::size_t block_bytes, std::size_t k) {
    const std::size_t off = k * piece;
    return off >= block_bytes ? std::size_t{0} : std::min(piece, block_bytes - off);
  };

  const std::size_t rounds = (max_block_bytes + piece - 1) / piece;
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::uint64_t g = arena.next_round();
    arena.wait_buffers_free(c, g);
    std::byte* mine = arena.buffer(r, g);
    for (int j = 0; j < p; ++j) {
      if (j == r) continue;
      const std::size_t n = piece_len(send_offsets[j + 1] - send_offsets[j], k);
      if (n > 0) std::memcpy(mine + slot_of(r, j), send + send_offsets[j] + k * piece, n);
    }
    arena.publish(c, SharedArena::Counter::written, g);
    arena.drain(c, g, [&](int q) {
      const std::size_t n = piece_len(recv_offsets[q + 1] - recv_offsets[q], k);
      if (n > 0) std::memcpy(recv + recv_offsets[q] + k * piece, arena.buffer(q, g) + slot_of(q, r), n);
    });
    arena.publish(c, SharedArena::Counter::read, g);
  }
}

}  // namespace tz
