#include "quant/scratch_pool.hpp"

#include <array>
#include <memory>

namespace tz {

ScratchPool& quant_scratch(Backend& device) {
  thread_local std::array<std::unique_ptr<ScratchPool>, kDeviceKindCount> pools;  // made at first use
  auto& pool = pools[static_cast<std::size_t>(device.kind())];
  if (!pool) pool = std::make_unique<ScratchPool>(device);
  return *pool;
}

}  // namespace tz
