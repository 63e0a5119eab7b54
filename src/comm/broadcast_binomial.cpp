// Binomial-tree broadcast. Ranks are renumbered relative to the root (v = (r - root) mod p). In
// round k = 0, 1, ... every rank v < 2^k that has the data sends it to v + 2^k; so v receives once,
// from v minus its highest set bit, and sends to v + 2^j for every 2^j above that bit. The message is
// cut into chunks (CommOptions::chunk_bytes) and each chunk is forwarded to the children as soon as
// it arrives, so the ceil(log2 p) levels pipeline.
// Bytes per rank (convention): the payload (each non-root receives it once), on the group's tier.
#include <vector>

#include "comm/algorithms.hpp"

namespace tz {

void broadcast_binomial(Collective& c, std::byte* buf, std::size_t bytes, int root) {
  const int p = c.size();
  if (p == 1) return;
  const int v = (c.rank() - root + p) % p;
  auto real = [&](int vr) { return (vr + root) % p; };
  int top = 1;  // smallest power of two above v's highest set bit (1 for the root)
  while (top <= v) top <<= 1;
  const int parent = v == 0 ? -1 : real(v - (top >> 1));
  std::vector<int> children;
  for (int step = top; v + step < p; step <<= 1) children.push_back(real(v + step));

  const Chunks ch(bytes, c.chunk_bytes());
  std::vector<Request> recvs, sends;
  const CancelPendingOnThrow guard(c, {&recvs, &sends});
  if (parent >= 0)
    for (std::size_t k = 0; k < ch.count; ++k)
      recvs.push_back(c.recv(buf + ch.offset(k), ch.length(k), parent));
  for (std::size_t k = 0; k < ch.count; ++k) {
    if (parent >= 0) c.wait(recvs[k]);
    // Farthest child first: it heads the largest subtree.
    for (auto it = children.rbegin(); it != children.rend(); ++it)
      sends.push_back(c.send(buf + ch.offset(k), ch.length(k), *it));
  }
  c.wait(sends);
}

}  // namespace tz
