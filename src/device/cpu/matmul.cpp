// Linear layer out = inp W^T + b with W stored (OC, C). All three products are gemm (device/cpu/gemm.hpp):
//   forward   out (N, OC)  = inp (N, C) W^T + b       2 N C OC FLOPs (the bias is added as C is stored)
//   backward  dinp (N, C)  = dout (N, OC) W (OC, C)   2 N C OC
//             dW (OC, C)  += dout^T inp               2 N C OC (dbias, the column sums of dout, are
//                                                     summed while dout^T is packed for this product)
// The fused layers run the same products with an epilogue (gemm_args.hpp): GELU written beside the
// pre-activation, GELU's derivative applied to the input gradient, a residual added to the output.
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"

namespace tz {

void matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N, int C, int OC) {
  gemm(linear_forward_gemm(out, inp, weight, bias, N, C, OC));
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     WeightRef weight, int N, int C, int OC) {
  gemm(linear_input_grad_gemm(dinp, dout, weight, N, C, OC));
  gemm(linear_weight_grad_gemm(dweight, dbias, dout, inp, N, C, OC));
}

void matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight, const float* bias, int N,
                         int C, int OC, GeluForm form) {
  gemm(linear_gelu_forward_gemm(pre, act, inp, weight, bias, N, C, OC, form));
}

void matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* act,
                          const float* pre, WeightRef weight, int N, int C, int OC, GeluForm form) {
  gemm(linear_gelu_input_grad_gemm(dpre, dout, pre, weight, N, C, OC, form));
  gemm(linear_weight_grad_gemm(dweight, dbias, dout, act, N, C, OC));
}

void matmul_residual_forward(float* out, const float* residual, const float* inp, WeightRef weight,
                             const float* bias, int N, int C, int OC) {
  gemm(linear_residual_forward_gemm(out, residual, inp, weight, bias, N, C, OC));
}

void matmul_forward_ref(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                        int OC) {
  for (int r = 0; r < N; ++r)
    for (int o = 0; o < OC; ++o) {
      double s = bias ? bias[o] : 0.0;
      for (int c = 0; c < C; ++c)
        s += double(inp[static_cast<std::size_t>(r) * C + c]) * weight[static_cast<std::size_t>(o) * C + c];
      out[static_cast<std::size_t>(r) * OC + o] = static_cast<float>(s);
    }
}

void matmul_backward_ref(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int N, int C, int OC) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) {
      double s = 0;
      for (int o = 0; o < OC; ++o)
        s += double(dout[static_cast<std::size_t>(r) * OC + o]) * weight[static_cast<std::size_t>(o) * C + c];
      dinp[static_cast<std::size_t>(r) * C + c] = static_cast<float>(s);
    }
  for (int o = 0; o < OC; ++o) {
    for (int c = 0; c < C; ++c) {
      double s = 0;
      for (int r = 0; r < N; ++r)
        s += double(dout[static_cast<std::size_t>(r) * OC + o]) * inp[static_cast<std::size_t>(r) * C + c];
      dweight[static_cast<std::size_t>(o) * C + c] += static_cast<float>(s);
    }
    if (dbias) {
      double s = 0;
      for (int r = 0; r < N; ++r) s += dout[static_cast<std::size_t>(r) * OC + o];
      dbias[o] += static_cast<float>(s);
    }
  }
}

}  // namespace tz
