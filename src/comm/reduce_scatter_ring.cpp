// Ring reduce-scatter. p ranks in a ring (send to r+1, receive from r-1). Step s = 0..p-2: rank r
// sends its partial sum of block (r - 1 - s) mod p (at s = 0 its own contribution) and receives the
// left neighbour's partial sum of block (r - 2 - s) mod p, to which it adds its own contribution;
// after step p-2 it holds the full sum of block r. Received data lands in a staging buffer, is
// reduced chunk by chunk (CommOptions::chunk_bytes) as it arrives, and each reduced chunk is sent on
// at once, so receiving, reducing and forwarding overlap across steps. Partial sums alternate
// between two persistent workspace blocks; the last step writes straight into the output.
// bf16 partial sums travel as bf16: each hop adds in fp32 and rounds once.
// Bytes per rank: sent = received = (p-1)/p of the unreduced tensor, on the group's tier.
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"
#include "device/cpu/reduce.hpp"

namespace tz {

void reduce_scatter_ring(Collective& c, const std::byte* send, std::byte* out,
                         std::span<const std::size_t> offsets, DType dtype) {
  const int p = c.size(), r = c.rank();
  const std::size_t esz = dtype_bytes(dtype);
  auto block_bytes = [&](int b) { return offsets[b + 1] - offsets[b]; };
  if (p == 1) {
    if (out != send + offsets[0] && block_bytes(0) > 0) std::memmove(out, send + offsets[0], block_bytes(0));
    return;
  }
  std::size_t max_block = 0;
  for (int b = 0; b < p; ++b) max_block = std::max(max_block, block_bytes(b));
  // Chunks must hold whole elements so that each can be reduced on its own.
  const std::size_t chunk = std::max<std::size_t>(c.chunk_bytes() / esz, 1) * esz;
  std::byte* stage[2] = {c.workspace().get(0, max_block), c.workspace().get(1, max_block)};
  std::byte* partial[2] = {c.workspace().get(2, max_block), c.workspace().get(3, max_block)};

  auto post_recvs = [&](int s, std::vector<Request>& into) {
    const int b = (r - 2 - s + 2 * p) % p;
    const Chunks ch(block_bytes(b), chunk);
    into.clear();
    for (std::size_t k = 0; k < ch.count; ++k)
      into.push_back(c.recv(stage[s % 2] + ch.offset(k), ch.length(k), c.left()));
  };

  std::vector<Request> recvs[2], forwarded[2], initial;
  const CancelPendingOnThrow guard(c, {&recvs[0], &recvs[1], &forwarded[0], &forwarded[1], &initial});
  {
    const int b = (r - 1 + p) % p;
    const Chunks ch(block_bytes(b), chunk);
    post_recvs(0, recvs[0]);
    for (std::size_t k = 0; k < ch.count; ++k)
      initial.push_back(c.send(send + offsets[b] + ch.offset(k), ch.length(k), c.right()));
  }
  for (int s = 0; s + 1 < p; ++s) {
    const bool last = s + 2 == p;
    if (!last) post_recvs(s + 1, recvs[(s + 1) % 2]);
    c.wait(forwarded[s % 2]);  // partial[s % 2] was being sent two steps ago
    forwarded[s % 2].clear();
    const int b = (r - 2 - s + 2 * p) % p;
    std::byte* dst = last ? out : partial[s % 2];
    const Chunks ch(block_bytes(b), chunk);
    for (std::size_t k = 0; k < ch.count; ++k) {
      c.wait(recvs[s % 2][k]);
      const std::size_t o = ch.offset(k), n = ch.length(k);
      reduce_add(dst + o, stage[s % 2] + o, send + offsets[b] + o, n / esz, dtype);
      c.transport().on_local_reduce(n);
      if (!last) forwarded[s % 2].push_back(c.send(dst + o, n, c.right()));
    }
  }
  c.wait(initial);
  c.wait(forwarded[0]);
  c.wait(forwarded[1]);
}

}  // namespace tz
