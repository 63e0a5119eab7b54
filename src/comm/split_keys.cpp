// exchange_split_keys (transport.hpp): every rank sends its (color, key) to every other rank on the
// reserved tag and waits with the deadline, so a transport's split learns the new groups (or fails
// naming the ranks that never arrived) before it enters anything that has no deadline of its own.
#include <fmt/format.h>

#include "comm/transport/transport.hpp"
#include "core/error.hpp"

namespace tz {

std::vector<std::array<int, 2>> exchange_split_keys(Transport& t, int color, int key, Deadline deadline) {
  const int p = t.size(), me = t.rank();
  std::vector<std::array<int, 2>> all(p);
  all[me] = {color, key};
  std::vector<Request> reqs;
  for (int peer = 0; peer < p; ++peer)
    if (peer != me)
      reqs.push_back(t.irecv(&all[peer], sizeof(all[peer]), peer, Transport::kFirstReservedTag));
  for (int peer = 0; peer < p; ++peer)
    if (peer != me) reqs.push_back(t.isend(&all[me], sizeof(all[me]), peer, Transport::kFirstReservedTag));
  if (!t.wait_all(reqs, deadline)) {
    std::vector<int> missing;
    for (const Request& r : reqs)
      if (r.pending() && !r.is_send) missing.push_back(t.world_rank(r.peer));
    t.cancel(reqs);
    throw CommTimeout(
        fmt::format("split timed out; not arrived: world rank(s) {{{}}}", fmt::join(missing, ",")));
  }
  return all;
}

}  // namespace tz
