#include "device/cuda/cuda_check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "core/error.hpp"

namespace tz::cuda {

void check(int error, const char* what) {
  if (error == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(error);
  throw InternalError(fmt::format("CUDA: {}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

void check_cublas(int status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const auto s = static_cast<cublasStatus_t>(status);
  throw InternalError(
      fmt::format("cuBLAS: {}: {} ({})", what, cublasGetStatusString(s), cublasGetStatusName(s)));
}

void fail(const char* what, long long detail) {
  throw InternalError(fmt::format("CUDA: {}: {}", what, detail));
}

}  // namespace tz::cuda
