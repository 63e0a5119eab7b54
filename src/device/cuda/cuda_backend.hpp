// The CUDA backend (device/backend.hpp): device memory is the GPU's. Allocations come from the
// device's stream-ordered pool (cudaMallocAsync; the pool keeps freed memory for reuse instead of
// returning it to the driver); copies and fills are cudaMemcpyAsync / cudaMemsetAsync on the calling
// thread's stream (cudaStreamPerThread), and every operation, kernels included, has finished when it
// returns: the seam's operations are synchronous today, so a buffer one thread wrote is ready for the
// next, whichever stream that one uses. Host code can neither read nor write this memory
// (host_addressable() false), so the communicators stage device buffers through host memory.
//
// The device: the process's local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or LOCAL_RANK)
// modulo the devices it sees, else device 0; every thread that reaches the backend binds to it.
#pragma once

#include <memory>

#include "device/backend.hpp"

namespace tz {

class CudaKernels;  // device/cuda/cuda_kernels.hpp

class CudaBackend final : public Backend {
 public:
  CudaBackend();  // InternalError when no CUDA device can be used (the runtime's message)
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  bool host_addressable() const override { return false; }
  void* allocate(std::size_t bytes) override;
  void release(void* device) noexcept override;
  bool is_device_address(const void* p) const override;
  void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const override;
  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override;
  void fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) override;
  // InternalError: the host has no address of GPU memory.
  void* host_address(const void* device, std::size_t bytes) const override;
  Kernels& kernels() override;

  int device() const { return device_; }
  // Makes the calling thread's current device this backend's (once per thread).
  void bind() const;

 private:
  int device_ = 0;
  std::unique_ptr<CudaKernels> kernels_;
};

// The process's CUDA backend, made at first use.
Backend& cuda_backend();

}  // namespace tz
