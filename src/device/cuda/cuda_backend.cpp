#include "device/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <new>
#include <string>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cuda_kernels.hpp"

namespace tz {
namespace {

int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* v = std::getenv(name)) {
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && r >= 0) return static_cast<int>(r);
    }
  return 0;
}

thread_local int bound_device = -1;

}  // namespace

CudaBackend::CudaBackend() {
  int count = 0;
  cuda::check(cudaGetDeviceCount(&count), "no CUDA device can be used");
  if (count <= 0) cuda::fail("no CUDA device can be used: devices seen", count);
  device_ = local_rank() % count;
  bind();
  // Keep freed memory in the pool: a training step allocates and frees the same sizes every step.
  cudaMemPool_t pool = nullptr;
  cuda::check(cudaDeviceGetDefaultMemPool(&pool, device_), "default memory pool");
  std::uint64_t keep = UINT64_MAX;
  cuda::check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "memory pool threshold");
  kernels_ = std::make_unique<CudaKernels>(*this);
}

CudaBackend::~CudaBackend() = default;

void CudaBackend::bind() const {
  if (bound_device == device_) return;
  cuda::check(cudaSetDevice(device_), "set device");
  bound_device = device_;
}

void* CudaBackend::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  bind();
  void* p = nullptr;
  const cudaError_t e = cudaMallocAsync(&p, bytes, cudaStreamPerThread);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it
    throw std::bad_alloc();
  }
  cuda::check(e, "allocate");
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "allocate");
  return p;
}

void CudaBackend::release(void* device) noexcept {
  if (device == nullptr) return;
  // Errors are dropped: release runs in destructors, also after the runtime has shut down at exit.
  if (bound_device != device_ && cudaSetDevice(device_) == cudaSuccess) bound_device = device_;
  if (cudaFreeAsync(device, cudaStreamPerThread) == cudaSuccess)
    (void)cudaStreamSynchronize(cudaStreamPerThread);
}

bool CudaBackend::is_device_address(const void* p) const {
  if (p == nullptr) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void CudaBackend::copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  bind();
  cuda::check(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, cudaStreamPerThread),
              "copy to device");
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "copy to device");
}

void CudaBackend::copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) const {
  if (bytes == 0) return;
  bind();
  cuda::check(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, cudaStreamPerThread),
              "copy to host");
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "copy to host");
}

void CudaBackend::copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0 || device_dst == device_src) return;
  bind();
  const auto* d = static_cast<const char*>(device_dst);
  const auto* s = static_cast<const char*>(device_src);
  if (d < s + bytes && s < d + bytes) {  // overlapping (memmove's contract): through a temporary
    void* tmp = allocate(bytes);
    cuda::check(cudaMemcpyAsync(tmp, device_src, bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread),
                "copy on device");
    cuda::check(cudaMemcpyAsync(device_dst, tmp, bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread),
                "copy on device");
    cuda::check(cudaFreeAsync(tmp, cudaStreamPerThread), "copy on device");
    cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "copy on device");
    return;
  }
  cuda::check(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread),
              "copy on device");
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "copy on device");
}

void CudaBackend::fill_bytes(void* device_dst, unsigned char value, std::size_t bytes) {
  if (bytes == 0) return;
  bind();
  cuda::check(cudaMemsetAsync(device_dst, value, bytes, cudaStreamPerThread), "fill");
  cuda::check(cudaStreamSynchronize(cudaStreamPerThread), "fill");
}

void* CudaBackend::host_address(const void* device, std::size_t bytes) const {
  TZ_CHECK(false, "the host has no address of CUDA memory ({} bytes at {})", bytes, device);
  return nullptr;
}

Kernels& CudaBackend::kernels() {
  return *kernels_;
}

Backend& cuda_backend() {
  static CudaBackend* b = new CudaBackend;  // never destroyed, as the other backends
  return *b;
}

}  // namespace tz
