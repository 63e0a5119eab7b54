// Shared-memory reduce-scatter, for a group whose ranks share a host (SharedArena). Each rank's
// staging buffer is cut into p - 1 pieces, one per destination, as in the shared all-to-all: piece
// (j - r - 1) mod p of rank r's buffer carries r's contribution to block j. Round k (k = 0 ..
// ceil(largest block / piece) - 1): each rank copies bytes [k*piece, (k+1)*piece) of every block but
// its own into its staging buffer and publishes the round (`written`); it then sums piece k of its
// own block: its own contribution plus every other rank's, taken from that rank's buffer once it has
// published, in rank order (so the result does not depend on timing), written straight into the
// output; then it publishes `read`. fp32 and f64 add in their type; bf16 adds in fp32 and rounds
// after each addition, as every hop of the ring does.
// Bytes per rank: the ledger's (p-1)/p of the unreduced tensor, as for the ring. In memory each
// contribution is copied in once and read once by the reduction, where the ring over shared-memory
// MPI copies each partial sum in and out and re-reads it at every one of its p - 1 steps.
#include <algorithm>
#include <cstring>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "device/cpu/reduce.hpp"

namespace tz {

void reduce_scatter_shared(Collective& c, SharedArena& arena, const std::byte* send, std::byte* out,
                           std::span<const std::size_t> offsets, DType dtype) {
  const int p = c.size(), r = c.rank();
  const std::size_t esz = dtype_bytes(dtype);
  auto block_bytes = [&](int b) { return offsets[b + 1] - offsets[b]; };
  if (p == 1) {
    if (out != send + offsets[0] && block_bytes(0) > 0) std::memmove(out, send + offsets[0], block_bytes(0));
    return;
  }
  const std::size_t piece = shared_piece_bytes(arena.slot_bytes(), p, esz);
  auto slot_of = [&](int from, int to) { return static_cast<std::size_t>((to - from - 1 + p) % p) * piece; };
  auto piece_len = [&](int b, std::size_t k) {
    const std::size_t off = k * piece;
    return off >= block_bytes(b) ? std::size_t{0} : std::min(piece, block_bytes(b) - off);
  };
  std::size_t largest = 0;
  for (int b = 0; b < p; ++b) largest = std::max(largest, block_bytes(b));

  const std::size_t rounds = (largest + piece - 1) / piece;
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::uint64_t g = arena.next_round();
    arena.wait_buffers_free(c, g);
    std::byte* mine = arena.buffer(r, g);
    for (int j = 0; j < p; ++j)
      if (const std::size_t n = piece_len(j, k); j != r && n > 0)
        std::memcpy(mine + slot_of(r, j), send + offsets[j] + k * piece, n);
    arena.publish(c, SharedArena::Counter::written, g);

    const std::size_t n = piece_len(r, k);
    std::byte* acc = n > 0 ? out + k * piece : out;        // an empty block's out may be null
    const std::byte* own = send + offsets[r] + k * piece;  // may alias acc (in place): read first
    bool first = true;
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      arena.wait(c, q, SharedArena::Counter::written, g);
      if (n == 0) continue;
      reduce_add(acc, first ? own : acc, arena.buffer(q, g) + slot_of(q, r), n / esz, dtype);
      c.transport().on_local_reduce(n);
      first = false;
    }
    arena.publish(c, SharedArena::Counter::read, g);
  }
}

}  // namespace tz
