// Scratch pool (scratch_pool.hpp): free buffers in a list under a mutex; a handed-out buffer's
// deleter puts it back. get() takes the free buffer of the largest capacity, so a pool that serves
// a few sizes settles on buffers that fit all of them.
#include "core/scratch_pool.hpp"

#include <algorithm>

namespace tz {

ScratchPool::ScratchPool() : free_(std::make_shared<Free>()) {}

ScratchBuffer ScratchPool::get(std::size_t bytes) {
  std::unique_ptr<std::vector<std::byte>> buf;
  {
    std::lock_guard lock(free_->mu);
    auto& list = free_->buffers;
    if (!list.empty()) {
      auto it = std::max_element(list.begin(), list.end(),
                                 [](const auto& a, const auto& b) { return a->capacity() < b->capacity(); });
      buf = std::move(*it);
      list.erase(it);
    } else {
      ++free_->allocated;
    }
  }
  if (!buf) buf = std::make_unique<std::vector<std::byte>>();
  if (buf->size() < bytes) buf->resize(bytes);  // never shrunk, so never zero-filled again
  std::shared_ptr<Free> home = free_;
  return ScratchBuffer(buf.release(), [home](std::vector<std::byte>* b) {
    std::lock_guard lock(home->mu);
    home->buffers.emplace_back(b);
  });
}

std::size_t ScratchPool::buffers() const {
  std::lock_guard lock(free_->mu);
  return free_->allocated;
}

}  // namespace tz
