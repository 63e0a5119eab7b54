// The arguments of a matrix product, the same for every backend's gemm kernel (device/kernels.hpp;
// the CPU one, device/cpu/gemm.hpp, documents the arithmetic): row-major matrices, addresses in the
// memory of the backend that runs it.
//   C (M x N) = alpha op(A) op(B) + beta C + bias     op(X) = X or X^T, bias a length-N row or null
#pragma once

#include "core/bf16.hpp"

namespace tz {

struct GemmArgs {
  bool trans_a = false;  // op(A) = A^T: A is stored K x M (lda >= M), else M x K (lda >= K)
  bool trans_b = false;  // op(B) = B^T: B is stored N x K (ldb >= K), else K x N (ldb >= N)
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  const float* A = nullptr;
  int lda = 0;
  const float* B = nullptr;
  const bf16* B16 = nullptr;  // instead of B: op(B) stored in bf16, widened exactly while it is packed
  int ldb = 0;
  float beta = 0.0f;  // 0: C is only written (it may hold anything, NaN included)
  float* C = nullptr;
  int ldc = 0;
  const float* bias = nullptr;  // (N) added to every row, or null
  float* a_row_sums = nullptr;  // (M) += sum over k of op(A)[m, k], or null
  bool serial = false;          // run on the calling thread only (for products inside a parallel_for task)
};

}  // namespace tz
