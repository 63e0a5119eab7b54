// Dissemination barrier (Hensgen, Finkel and Manber). Round k = 0 .. ceil(log2 p)-1: rank r sends an
// empty message to r + 2^k and waits for one from r - 2^k. After the last round every rank has heard,
// directly or transitively, from every other, so none leaves before all have arrived.
// Bytes per rank: 0.
#include "comm/algorithms.hpp"

namespace tz {

void barrier_dissemination(Collective& c) {
  const int p = c.size(), r = c.rank();
  for (int dist = 1; dist < p; dist <<= 1) {
    Request reqs[2] = {c.recv(nullptr, 0, (r - dist + p) % p), c.send(nullptr, 0, (r + dist) % p)};
    c.wait(reqs);
  }
}

}  // namespace tz
