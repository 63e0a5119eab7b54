// The passes around a cuBLAS product that cuBLAS does not do: a bias row added to every row of C, the
// row sums of op(A) (a linear layer's bias gradient: the column sums of dout). One thread per output
// element, summing in index order: deterministic; against the cpu backend's GEMM, whose sums run in
// its own blocked order, within fp32 rounding of the sum (the tests' tolerance).
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

__global__ void add_bias_rows_kernel(float* C, const float* bias, int M, int N, int ldc) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(M) * N) return;
  const long long m = i / N, n = i % N;
  C[m * ldc + n] += bias[n];
}

__global__ void add_row_sums_kernel(float* sums, const float* A, bool trans_a, int M, int K, int lda) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k)
    s += trans_a ? A[static_cast<long long>(k) * lda + m] : A[static_cast<long long>(m) * lda + k];
  sums[m] += s;
}

}  // namespace

void add_bias_rows(cudaStream_t s, float* C, const float* bias, int M, int N, int ldc) {
  const long long total = static_cast<long long>(M) * N;
  if (total <= 0) return;
  add_bias_rows_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, s>>>(C, bias, M, N, ldc);
  check(cudaGetLastError(), "gemm: bias");
}

void add_row_sums(cudaStream_t s, float* row_sums, const float* A, bool trans_a, int M, int K, int lda) {
  if (M <= 0) return;
  add_row_sums_kernel<<<(M + 127) / 128, 128, 0, s>>>(row_sums, A, trans_a, M, K, lda);
  check(cudaGetLastError(), "gemm: row sums");
}

}  // namespace tz::cuda
