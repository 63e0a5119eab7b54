// Scratch pool (scratch_pool.hpp): free buffers in a list under a mutex; a handed-out buffer's
// deleter puts it back. get() takes the free buffer of the largest size, so a pool that serves a few
// sizes settles on buffers that fit all of them.
#include "device/scratch_pool.hpp"

#include <algorithm>

namespace tz {

ScratchPool::ScratchPool(Backend& backend) : backend_(backend), free_(std::make_shared<Free>()) {}

ScratchBuffer ScratchPool::get(std::size_t bytes) {
  std::unique_ptr<DeviceBuffer<std::byte>> buf;
  {
    std::lock_guard lock(free_->mu);
    auto& list = free_->buffers;
    if (!list.empty()) {
      auto it = std::max_element(list.begin(), list.end(),
                                 [](const auto& a, const auto& b) { return a->size() < b->size(); });
      buf = std::move(*it);
      list.erase(it);
    } else {
      ++free_->allocated;
    }
  }
  // Never shrunk, so a settled pool allocates (and zero-fills) nothing.
  if (!buf || buf->size() < bytes) buf = std::make_unique<DeviceBuffer<std::byte>>(backend_, bytes);
  std::shared_ptr<Free> home = free_;
  return ScratchBuffer(buf.release(), [home](DeviceBuffer<std::byte>* b) {
    std::lock_guard lock(home->mu);
    home->buffers.emplace_back(b);
  });
}

std::size_t ScratchPool::buffers() const {
  std::lock_guard lock(free_->mu);
  return free_->allocated;
}

}  // namespace tz
