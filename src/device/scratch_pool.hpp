// Scratch buffers for collectives in flight (a hierarchical collective's intermediate shards, the
// codes of a qwZ gather, the slices of a qgZ step), in device memory of one backend.
// A non-blocking collective keeps its buffers until its last host task has run, so several of them
// need their own; the pool hands out a buffer per use and takes it back when the last reference
// goes (from whichever thread drops it), so steady-state calls allocate nothing. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "device/device_buffer.hpp"

namespace tz {

using ScratchBuffer = std::shared_ptr<DeviceBuffer<std::byte>>;

class ScratchPool {
 public:
  explicit ScratchPool(Backend& backend);
  // A buffer of at least `bytes` (contents unspecified), back in the pool when the last copy is gone.
  ScratchBuffer get(std::size_t bytes);
  std::size_t buffers() const;  // allocated so far (in use or free)
  Backend& backend() const { return backend_; }

 private:
  struct Free {
    std::mutex mu;
    std::vector<std::unique_ptr<DeviceBuffer<std::byte>>> buffers;
    std::size_t allocated = 0;
  };
  Backend& backend_;
  std::shared_ptr<Free> free_;  // shared with the buffers' deleters, which may outlive the pool
};

}  // namespace tz
