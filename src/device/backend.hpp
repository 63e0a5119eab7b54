// A backend: where the bytes of model state and activations live, and what moves and computes them.
// The engine, the model, the optimizer, quantization and communication reach device memory only
// through it, so a GPU backend (CUDA/HIP: docs/backends.md maps every operation) is one new folder
// plus one communicator, and the host never dereferences device memory behind its back.
//
//   memory   allocate / free (64-byte aligned), copies host -> device, device -> host and
//            device -> device, byte fill: cudaMallocAsync, cudaMemcpyAsync, cudaMemsetAsync
//   order    Work (device/work.hpp) is the event: a copy or kernel enqueued behind Works completes
//            one; a host thread waits for it, a communicator or stream is ordered behind it
//   kernels  the backend's kernel table (device/kernels.hpp)
//
// Backends of this build:
//   cpu       device memory is host memory: pointers are host pointers, copies are memcpy, kernels
//             the CPU paths chosen at run time (AVX-512, AVX2, portable). Today's speed.
//   emulated  a strict device on the CPU: its memory is host memory behind tagged addresses (high
//             bits set, non-canonical on x86-64 and outside every aarch64 address space), so a host
//             load or store of device memory that did not go through the backend faults at once
//             instead of passing; copies and kernels untag, and check every access against the
//             allocation it falls in. Everything that passes on it touches device bytes only through
//             the backend.
//   cuda      an NVIDIA GPU (device/cuda/, built with -DTZ_CUDA=ON): cudaMallocAsync memory, copies
//             and kernels on the calling thread's stream, products in cuBLAS (docs/backends.md).
// A Backend is shared by every thread of a rank; its methods are thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

class Kernels;  // device/kernels.hpp

enum class DeviceKind { cpu, emulated, cuda };
inline constexpr int kDeviceKindCount = 3;
std::string_view device_kind_name(DeviceKind kind);
// "cpu" | "emulated" | "cuda"; InputError naming `option` and listing the kinds otherwise, and for
// "cuda" in a build without the CUDA backend.
DeviceKind parse_device_kind(std::string_view name, std::string_view option);
std::vector<std::string> device_kind_names();  // every kind, built or not (cuda_backend_built)
bool cuda_backend_built();

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  std::string_view name() const { return device_kind_name(kind()); }
  // Whether host code may load and store this backend's memory directly (the cpu backend only): a
  // transport that is not device-aware then sends straight from device buffers instead of staging.
  virtual bool host_addressable() const = 0;

  // Device memory of `bytes` bytes, 64-byte aligned, contents undefined; null for 0 bytes. Throws
  // std::bad_alloc when memory is short.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* device) noexcept = 0;  // of allocate(); null is a no-op

  // Whether `p` is an address of this backend's memory (what cudaPointerGetAttributes tells a
  // CUDA-aware MPI): false for every address on the cpu backend, whose memory is host memory.
  virtual bool is_device_address(const void* p) const = 0;

  virtual void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const = 0;
  virtual void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) = 0;

  // For the backend's own kernels (device/kernels.hpp) and for host code of the cpu backend:
  // the host address of `bytes` bytes at a device address. The emulated backend checks that they lie
  // inside one live allocation (InternalError naming the address otherwise) and untags the address;
  // a backend whose memory the host cannot reach at all (a GPU) has no such address.
  virtual void* host_address(const void* device, std::size_t bytes) const = 0;

  // The backend's kernel table (device/kernels.hpp): every operation on its memory.
  virtual Kernels& kernels() = 0;
};

// The backend of `kind`, one per process (allocations of one kind share it), made at first use. The
// cuda one is an InputError in a build without it, an InternalError when no GPU can be used.
Backend& backend(DeviceKind kind);

}  // namespace tz
