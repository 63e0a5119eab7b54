// Pairwise all-to-all. Step s = 1..p-1: rank r sends its block (r + s) mod p to rank r + s and
// receives block (r - s) mod p from rank r - s, straight into place; its own block is a local copy.
// Every step is posted at once (the receive buffers are distinct), in step order, so that on a
// network each rank talks to one peer at a time first; chunking is unnecessary as nothing is
// forwarded. Blocks may differ in length (given by offsets); each send's length must equal its
// receiver's receive length, else the transport reports a size mismatch.
// Bytes per rank: sent = received = (p-1)/p of its send buffer (for equal blocks), on the group's tier.
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"

namespace tz {

void all_to_all_pairwise(Collective& c, const std::byte* send, std::span<const std::size_t> send_offsets,
                         std::byte* recv, std::span<const std::size_t> recv_offsets) {
  const int p = c.size(), r = c.rank();
  std::vector<Request> reqs;
  reqs.reserve(2 * (p - 1));
  for (int s = 1; s < p; ++s) {
    const int from = (r - s + p) % p;
    reqs.push_back(c.recv(recv + recv_offsets[from], recv_offsets[from + 1] - recv_offsets[from], from));
  }
  for (int s = 1; s < p; ++s) {
    const int to = (r + s) % p;
    reqs.push_back(c.send(send + send_offsets[to], send_offsets[to + 1] - send_offsets[to], to));
  }
  if (const std::size_t own = send_offsets[r + 1] - send_offsets[r]; own > 0)
    std::memcpy(recv + recv_offsets[r], send + send_offsets[r], own);
  c.wait(reqs);
}

}  // namespace tz
