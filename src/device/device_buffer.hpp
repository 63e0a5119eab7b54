// Device memory as types: DevicePtr<T> is an address in a backend's memory, DeviceBuffer<T> owns an
// allocation of `size()` elements. Neither can be dereferenced or indexed by host code: values reach
// the host only through the backend's copies (download, upload below) and are changed only by its
// kernels, so the compiler refuses a host access the emulated backend would catch at run time.
// Offsets (p + n, buffer.at(n)) are in elements, as with pointers. A buffer is movable, not copyable.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "device/backend.hpp"

namespace tz {

template <typename T>
class DevicePtr {
 public:
  DevicePtr() = default;
  // An address the backend handed out (or an offset into one); for backends and their kernels.
  DevicePtr(Backend* backend, T* address) : backend_(backend), address_(address) {}

  Backend* backend() const { return backend_; }
  // The device address: for the backend's own code (kernels, copies, a device-aware communicator),
  // never for host loads and stores.
  T* address() const { return address_; }
  bool null() const { return address_ == nullptr; }

  DevicePtr operator+(std::size_t elements) const { return {backend_, address_ + elements}; }
  operator DevicePtr<const T>() const { return {backend_, address_}; }  // NOLINT: as T* -> const T*

 private:
  Backend* backend_ = nullptr;
  T* address_ = nullptr;
};

// The same device address viewed as another element type (as reinterpret_cast does for pointers):
// a byte buffer holding bf16 or f32 elements, a float buffer handed to a dtype-generic kernel.
template <typename U, typename T>
DevicePtr<U> device_cast(DevicePtr<T> p) {
  return {p.backend(), reinterpret_cast<U*>(p.address())};
}

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `count` elements, zero-filled (a fresh buffer never holds stale bytes).
  DeviceBuffer(Backend& backend, std::size_t count)
      : backend_(&backend), address_(static_cast<T*>(backend.allocate(count * sizeof(T)))), count_(count) {
    backend.fill_bytes(address_, 0, count * sizeof(T));
  }
  ~DeviceBuffer() {
    if (backend_) backend_->release(address_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : backend_(std::exchange(o.backend_, nullptr)),
        address_(std::exchange(o.address_, nullptr)),
        count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (backend_) backend_->release(address_);
      backend_ = std::exchange(o.backend_, nullptr);
      address_ = std::exchange(o.address_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  Backend* backend() const { return backend_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }

  DevicePtr<T> data() { return {backend_, address_}; }
  DevicePtr<const T> data() const { return {backend_, address_}; }
  // Element `offset` (offset <= size()).
  DevicePtr<T> at(std::size_t offset) {
    TZ_CHECK(offset <= count_, "device buffer offset {} of {}", offset, count_);
    return data() + offset;
  }
  DevicePtr<const T> at(std::size_t offset) const {
    TZ_CHECK(offset <= count_, "device buffer offset {} of {}", offset, count_);
    return data() + offset;
  }

 private:
  Backend* backend_ = nullptr;
  T* address_ = nullptr;
  std::size_t count_ = 0;
};

// Host <-> device copies of `n` elements (synchronous). The device side may be a pointer to T or to
// const T.
template <typename T>
void upload(DevicePtr<T> dst, const T* host_src, std::size_t n) {
  if (n > 0) dst.backend()->copy_to_device(dst.address(), host_src, n * sizeof(T));
}
template <typename T>
void download(std::remove_const_t<T>* host_dst, DevicePtr<T> src, std::size_t n) {
  if (n > 0) src.backend()->copy_to_host(host_dst, src.address(), n * sizeof(T));
}
template <typename T>
std::vector<std::remove_const_t<T>> download(DevicePtr<T> src, std::size_t n) {
  std::vector<std::remove_const_t<T>> out(n);
  download(out.data(), src, n);
  return out;
}
template <typename T>
std::vector<T> download(const DeviceBuffer<T>& buffer) {
  return download(buffer.data(), buffer.size());
}
template <typename T>
void upload(DeviceBuffer<T>& buffer, std::span<const T> host) {
  TZ_CHECK_EQ(host.size(), buffer.size());
  upload(buffer.data(), host.data(), host.size());
}
// `bytes` bytes from `src` to `dst`, each host memory or memory of `backend`, told apart by address
// (as cudaMemcpy with cudaMemcpyDefault does under unified addressing).
inline void copy_bytes(Backend& backend, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const bool d = backend.is_device_address(dst), s = backend.is_device_address(src);
  if (d && s)
    backend.copy_on_device(dst, src, bytes);
  else if (d)
    backend.copy_to_device(dst, src, bytes);
  else if (s)
    backend.copy_to_host(dst, src, bytes);
  else
    std::memmove(dst, src, bytes);
}

// Device -> device, `n` elements; both on the same backend.
template <typename T, typename S>
requires std::is_same_v<std::remove_const_t<S>, T>
void copy_on_device(DevicePtr<T> dst, DevicePtr<S> src, std::size_t n) {
  TZ_CHECK(dst.backend() == src.backend(), "a device copy between two backends");
  if (n > 0) dst.backend()->copy_on_device(dst.address(), src.address(), n * sizeof(T));
}

}  // namespace tz
