// The cpu backend: device memory is host memory (backend.hpp).
#pragma once

#include "device/backend.hpp"
#include "device/cpu/cpu_kernels.hpp"

namespace tz {

inline constexpr std::size_t kDeviceAlignment = 64;  // bytes: a cache line, an AVX-512 vector

// Host memory of `bytes` (> 0) rounded up to and aligned at kDeviceAlignment; std::bad_alloc when
// the host has none. Freed with std::free. The cpu backend's memory, and the emulated device's.
void* allocate_aligned_host(std::size_t bytes);

class CpuBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::cpu; }
  bool host_addressable() const override { return true; }
  bool is_device_address(const void*) const override { return false; }
  void* allocate(std::size_t bytes) override;
  void release(void* device) noexcept override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) override;
  void* host_address(const void* device, std::size_t bytes) const override;
  Kernels& kernels() override { return kernels_; }

 private:
  CpuKernels kernels_;
};

}  // namespace tz
