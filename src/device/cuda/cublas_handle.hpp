// The calling thread's cuBLAS handle (a handle is not shared between threads), created on first use
// with fp32 default math (no TF32) and the thread's stream (cudaStreamPerThread). A launcher given
// another stream sets it on the handle for its calls and puts the thread's stream back
// (CublasStreamGuard).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace tz::cuda {

cublasHandle_t cublas_handle();

// Sets `stream` on the thread's handle for the guard's lifetime; restores the previous stream after.
class CublasStreamGuard {
 public:
  explicit CublasStreamGuard(cudaStream_t stream);
  ~CublasStreamGuard();
  CublasStreamGuard(const CublasStreamGuard&) = delete;
  CublasStreamGuard& operator=(const CublasStreamGuard&) = delete;
  cublasHandle_t handle() const { return handle_; }

 private:
  cublasHandle_t handle_;
  cudaStream_t previous_ = nullptr;
};

}  // namespace tz::cuda
