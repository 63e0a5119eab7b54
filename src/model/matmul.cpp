// Linear layer out = inp W^T + b with W stored (OC, C). All three products go to BLAS sgemm:
//   forward   out (N, OC)  = inp (N, C) W^T           2 N C OC FLOPs
//   backward  dinp (N, C)  = dout (N, OC) W (OC, C)   2 N C OC
//             dW (OC, C)  += dout^T inp               2 N C OC
// The bias is broadcast into `out` first and sgemm adds onto it (beta = 1); dbias is a column sum.
#include <cblas.h>

#include <cstring>

#include "model/layers.hpp"
#include "model/thread_pool.hpp"

namespace tz {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                    int OC) {
  if (bias) {
    parallel_for(N, 64, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) std::memcpy(out + r * OC, bias, sizeof(float) * OC);
    });
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f,
              out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias) {
    parallel_for(OC, 64, [&](std::size_t o0, std::size_t o1) {
      for (int r = 0; r < N; ++r) {
        const float* d = dout + static_cast<std::size_t>(r) * OC;
        for (std::size_t o = o0; o < o1; ++o) dbias[o] += d[o];
      }
    });
  }
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
