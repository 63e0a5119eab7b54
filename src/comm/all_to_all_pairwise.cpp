// Pairwise all-to-all. Step s = 1..p-1: rank r sends its block (r + s) mod p to rank r + s and
// receives block (r - s) mod p from rank r - s, straight into place; its own block is a local copy.
// Every step is posted at once (the receive buffers are distinct), in step order, so that on a
// network each rank talks to one peer at a time first; chunking is unnecessary as nothing is
// forwarded. Bytes per rank: sent = received = (p-1)/p of its send buffer, on the group's tier.
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"

namespace tz {

void all_to_all_pairwise(Collective& c, const std::byte* send, std::byte* recv, std::size_t block_bytes) {
  const int p = c.size(), r = c.rank();
  std::vector<Request> reqs;
  reqs.reserve(2 * (p - 1));
  for (int s = 1; s < p; ++s) {
    const int from = (r - s + p) % p;
    reqs.push_back(c.recv(recv + from * block_bytes, block_bytes, from));
  }
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p;
    reqs.push_back(c.send(send + to * block_bytes, block_bytes, to));
  }
  if (block_bytes > 0) std::memcpy(recv + r * block_bytes, send + r * block_bytes, block_bytes);
  c.wait(reqs);
}

}  // namespace tz
