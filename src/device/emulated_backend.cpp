// The emulated backend (emulated_backend.hpp): tagged addresses, translated only after a bounds check
// against the live allocations.
#include "device/emulated_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.hpp"
#include "device/cpu_backend.hpp"

namespace tz {
namespace {

std::uintptr_t bits(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

void* EmulatedBackend::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = allocate_aligned_host(bytes);
  TZ_CHECK((bits(p) & kEmulatedAddressTag) == 0, "host address {} already has the tag bits", p);
  const std::uintptr_t tagged = bits(p) | kEmulatedAddressTag;
  std::lock_guard lock(mu_);
  live_[tagged] = bytes;
  return reinterpret_cast<void*>(tagged);
}

void EmulatedBackend::release(void* device) noexcept {
  if (device == nullptr) return;
  {
    std::lock_guard lock(mu_);
    const auto it = live_.find(bits(device));
    if (it == live_.end()) std::abort();  // a double free or a foreign address: no exception from here
    live_.erase(it);
  }
  std::free(reinterpret_cast<void*>(bits(device) & ~kEmulatedAddressTag));
}

void* EmulatedBackend::host_address(const void* device, std::size_t bytes) const {
  const std::uintptr_t a = bits(device);
  std::lock_guard lock(mu_);
  auto it = live_.upper_bound(a);
  TZ_CHECK(it != live_.begin(), "emulated device: address {:#x} is not device memory (a host pointer?)", a);
  --it;
  TZ_CHECK(
      a >= it->first && a - it->first + bytes <= it->second,
      "emulated device: {} bytes at {:#x} leave the allocation [{:#x}, +{}) (an overrun or a freed buffer)",
      bytes, a, it->first, it->second);
  return reinterpret_cast<void*>(a & ~kEmulatedAddressTag);
}

void EmulatedBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(host_address(device_dst, bytes), host_src, bytes);
}

void EmulatedBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const {
  if (bytes > 0) std::memcpy(host_dst, host_address(device_src, bytes), bytes);
}

void EmulatedBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes > 0) std::memmove(host_address(device_dst, bytes), host_address(device_src, bytes), bytes);
}

void EmulatedBackend::fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes > 0) std::memset(host_address(device_dst, bytes), value, bytes);
}

std::size_t EmulatedBackend::live_allocations() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

}  // namespace tz
