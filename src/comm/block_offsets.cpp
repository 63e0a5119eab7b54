// Block layouts shared by the ring algorithms (algorithms.hpp).
#include <cstddef>
#include <vector>

#include "comm/algorithms.hpp"

namespace tz {

std::vector<std::size_t> even_block_offsets(std::size_t count, int p, std::size_t elem_bytes) {
  std::vector<std::size_t> off(p + 1);
  const std::size_t base = count / p, extra = count % p;
  for (int i = 0; i <= p; ++i) off[i] = (i * base + std::min<std::size_t>(i, extra)) * elem_bytes;
  return off;
}

std::vector<std::size_t> uniform_block_offsets(std::size_t block_bytes, int p) {
  std::vector<std::size_t> off(p + 1);
  for (int i = 0; i <= p; ++i) off[i] = i * block_bytes;
  return off;
}

}  // namespace tz
