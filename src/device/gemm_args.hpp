// The arguments of a matrix product, the same for every backend's gemm kernel (device/kernels.hpp;
// the CPU one, device/cpu/gemm.hpp, documents the arithmetic): row-major matrices, addresses in the
// memory of the backend that runs it.
//   C (M x N) = alpha op(A) op(B) + beta C + bias     op(X) = X or X^T, bias a length-N row or null
#pragma once

#include "core/bf16.hpp"
#include "device/weight_ref.hpp"

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

// The three products of a linear layer out = inp W^T + b, W stored (OC, C) (device/cpu/layers.hpp),
// as every backend's matmul_forward / matmul_backward runs them:
//   forward      out (N, OC)  = inp (N, C) W^T + b
//   input grad   dinp (N, C)  = dout (N, OC) W            (overwritten)
//   weight grad  dW (OC, C)  += dout^T inp, dbias (OC) += the row sums of dout^T
inline GemmArgs linear_forward_gemm(float* out, const float* inp, WeightRef weight, const float* bias, int N,
                                    int C, int OC) {
  return {.trans_b = true,
          .M = N,
          .N = OC,
          .K = C,
          .A = inp,
          .lda = C,
          .B = weight.f32,
          .B16 = weight.b16,
          .ldb = C,
          .C = out,
          .ldc = OC,
          .bias = bias};
}
inline GemmArgs linear_input_grad_gemm(float* dinp, const float* dout, WeightRef weight, int N, int C,
                                       int OC) {
  return {.M = N,
          .N = C,
          .K = OC,
          .A = dout,
          .lda = OC,
          .B = weight.f32,
          .B16 = weight.b16,
          .ldb = C,
          .C = dinp,
          .ldc = C};
}
inline GemmArgs linear_weight_grad_gemm(float* dweight, float* dbias, const float* dout, const float* inp,
                                        int N, int C, int OC) {
  return {.trans_a = true,
          .M = OC,
          .N = C,
          .K = N,
          .A = dout,
          .lda = OC,
          .B = inp,
          .ldb = C,
          .beta = 1.0f,
          .C = dweight,
          .ldc = C,
          .a_row_sums = dbias};
}

}  // namespace tz
