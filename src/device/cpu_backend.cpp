// The cpu backend (backend.hpp): device memory is host memory, so copies are memcpy and a device
// address is its own host address.
#include "device/cpu_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace tz {

void* allocate_aligned_host(std::size_t bytes) {
  void* p = std::aligned_alloc(kDeviceAlignment,
                               (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* CpuBackend::allocate(std::size_t bytes) {
  return bytes == 0 ? nullptr : allocate_aligned_host(bytes);
}

void CpuBackend::release(void* device) noexcept {
  std::free(device);
}

void CpuBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const {
  if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
}

void CpuBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes > 0) std::memmove(device_dst, device_src, bytes);
}

void CpuBackend::fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes > 0) std::memset(device_dst, value, bytes);
}

void* CpuBackend::host_address(const void* device, std::size_t) const {
  return const_cast<void*>(device);
}

}  // namespace tz
