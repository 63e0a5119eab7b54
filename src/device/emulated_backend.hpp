// The emulated backend: a strict device on the CPU (backend.hpp). Its memory is host memory handed
// out under tagged addresses: bit 62 and bit 52 set on the allocation's host address. On x86-64 such
// an address is non-canonical (with 4- and 5-level paging alike), on aarch64 outside the 48- and
// 52-bit address spaces whatever the top-byte-ignore setting: a host load or store through it faults
// (SIGSEGV, or a report under AddressSanitizer) instead of reading stale or foreign bytes. The
// backend's copies and kernels untag an address only after finding the live allocation it falls in
// and checking that the access stays inside it (InternalError otherwise: an overrun, a freed buffer,
// an address of another backend). So a run that passes on it touched device bytes only through the
// backend, and within bounds.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "device/backend.hpp"
#include "device/emulated_kernels.hpp"

namespace tz {

inline constexpr std::uintptr_t kEmulatedAddressTag = (std::uintptr_t{1} << 62) | (std::uintptr_t{1} << 52);

class EmulatedBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::emulated; }
  bool host_addressable() const override { return false; }
  bool is_device_address(const void* p) const override {
    return (reinterpret_cast<std::uintptr_t>(p) & kEmulatedAddressTag) == kEmulatedAddressTag;
  }
  void* allocate(std::size_t bytes) override;
  void release(void* device) noexcept override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) override;
  void* host_address(const void* device, std::size_t bytes) const override;
  Kernels& kernels() override { return kernels_; }

  std::size_t live_allocations() const;

 private:
  mutable std::mutex mu_;
  std::map<std::uintptr_t, std::size_t> live_;  // tagged base address -> bytes
  EmulatedKernels kernels_{*this};
};

}  // namespace tz
