// The arguments of a matrix product, the same for every backend's gemm kernel (device/kernels.hpp;
// the CPU one, device/cpu/gemm.hpp, documents the arithmetic): row-major matrices, addresses in the
// memory of the backend that runs it.
//   C (M x N) = alpha op(A) op(B) + beta C + bias     op(X) = X or X^T, bias a length-N row or null
// then, optionally, an elementwise epilogue on each element of C once it is final, while its tile is
// still in cache (GemmEpilogue): the activation, the activation's derivative or a residual add that
// would otherwise be a separate pass over the whole matrix.
#pragma once

#include "core/bf16.hpp"
#include "device/weight_ref.hpp"

namespace tz {

// The elementwise step a product applies to its finished C (E the epilogue's M x N operand, at its
// own leading dimension). Each is the same scalar formula per element as the separate kernel it
// replaces (device/cpu/layers.hpp), so a fused product equals the unfused pair bit for bit.
enum class GemmEpilogue {
  none,
  gelu_tanh,        // E_out = gelu_tanh(C); C keeps the pre-activation
  gelu_exact,       // E_out = gelu_exact(C)
  gelu_tanh_grad,   // C = gelu_tanh'(E_in) C: d act becomes d pre-activation (E_in)
  gelu_exact_grad,  // C = gelu_exact'(E_in) C
  add,              // C = C + E_in: a residual connection
};

// The GELU of a model's MLP, for the fused linear layers below.
enum class GeluForm { tanh, exact };

inline GemmEpilogue gelu_epilogue(GeluForm form, bool grad) {
  if (form == GeluForm::tanh) return grad ? GemmEpilogue::gelu_tanh_grad : GemmEpilogue::gelu_tanh;
  return grad ? GemmEpilogue::gelu_exact_grad : GemmEpilogue::gelu_exact;
}

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
  GemmEpilogue epilogue = GemmEpilogue::none;
  const float* epi_in = nullptr;  // (M x N) read by the *_grad and add epilogues; must not alias C
  int ld_epi_in = 0;
  float* epi_out = nullptr;  // (M x N) written by the activation epilogues
  int ld_epi_out = 0;
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

// The fused linear layers (device/kernels.hpp): the same products with an epilogue.
//   pre (N, OC) = inp W^T + b, act = gelu(pre)                    (the MLP's first product)
inline GemmArgs linear_gelu_forward_gemm(float* pre, float* act, const float* inp, WeightRef weight,
                                         const float* bias, int N, int C, int OC, GeluForm form) {
  GemmArgs g = linear_forward_gemm(pre, inp, weight, bias, N, C, OC);
  g.epilogue = gelu_epilogue(form, false);
  g.epi_out = act;
  g.ld_epi_out = OC;
  return g;
}
//   dpre (N, C) = (dout W) gelu'(pre)       (the input grad of the MLP's second product, C = its width)
inline GemmArgs linear_gelu_input_grad_gemm(float* dpre, const float* dout, const float* pre,
                                            WeightRef weight, int N, int C, int OC, GeluForm form) {
  GemmArgs g = linear_input_grad_gemm(dpre, dout, weight, N, C, OC);
  g.epilogue = gelu_epilogue(form, true);
  g.epi_in = pre;
  g.ld_epi_in = C;
  return g;
}
//   out (N, OC) = inp W^T + b + residual
inline GemmArgs linear_residual_forward_gemm(float* out, const float* residual, const float* inp,
                                             WeightRef weight, const float* bias, int N, int C, int OC) {
  GemmArgs g = linear_forward_gemm(out, inp, weight, bias, N, C, OC);
  g.epilogue = GemmEpilogue::add;
  g.epi_in = residual;
  g.ld_epi_in = OC;
  return g;
}

}  // namespace tz
