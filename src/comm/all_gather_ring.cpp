// Ring all-gather. p ranks in a ring (rank r sends to r+1 and receives from r-1). Step s = 0..p-2:
// rank r forwards block (r - s) mod p, which it owns (s = 0) or received at step s-1, and receives
// block (r - s - 1) mod p straight into its place in the output (no staging copy). Each block is cut
// into chunks (CommOptions::chunk_bytes) and a chunk is forwarded as soon as it arrives, so the
// steps pipeline. All receives are posted up front: they target distinct output regions.
// Bytes per rank: sent = received = (p-1)/p of the gathered tensor, on the group's tier.
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"

namespace tz {

void all_gather_ring(Collective& c, const std::byte* own, std::byte* buf,
                     std::span<const std::size_t> offsets) {
  const int p = c.size(), r = c.rank();
  auto block = [&](int b) { return buf + offsets[b]; };
  auto block_bytes = [&](int b) { return offsets[b + 1] - offsets[b]; };
  const bool in_place = own == block(r);
  if (p == 1) {
    if (!in_place && block_bytes(r) > 0) std::memcpy(block(r), own, block_bytes(r));
    return;
  }

  // Chunks exist to forward data as it arrives; with two ranks nothing is forwarded: one message.
  const std::size_t chunk = p == 2 ? std::max<std::size_t>(offsets[p], 1) : c.chunk_bytes();
  std::vector<Request> recvs;
  for (int s = 0; s + 1 < p; ++s) {
    const int b = (r - s - 1 + p) % p;
    const Chunks ch(block_bytes(b), chunk);
    for (std::size_t k = 0; k < ch.count; ++k)
      recvs.push_back(c.recv(block(b) + ch.offset(k), ch.length(k), c.left()));
  }
  std::vector<Request> sends;
  const CancelPendingOnThrow guard(c, {&recvs, &sends});
  {
    const Chunks ch(block_bytes(r), chunk);
    for (std::size_t k = 0; k < ch.count; ++k)
      sends.push_back(c.send(own + ch.offset(k), ch.length(k), c.right()));
  }
  if (!in_place && block_bytes(r) > 0) std::memcpy(block(r), own, block_bytes(r));

  std::size_t next = 0;
  for (int s = 0; s + 1 < p; ++s) {
    const int b = (r - s - 1 + p) % p;
    const Chunks ch(block_bytes(b), chunk);
    for (std::size_t k = 0; k < ch.count; ++k) {
      c.wait(recvs[next++]);
      if (s + 2 < p) sends.push_back(c.send(block(b) + ch.offset(k), ch.length(k), c.right()));
    }
  }
  c.wait(sends);
}

}  // namespace tz
