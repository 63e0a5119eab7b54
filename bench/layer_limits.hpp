// tz_model_bench --limits: each layer slot's measured time per step beside its limit on this CPU
// (model/layer_work.hpp says what each slot must do): the linear layers against OpenBLAS sgemm of
// the same three products (and tierzero's gemm on the very arguments the layer passes, so that what a
// layer adds to its products shows apart from the kernel), attention's causal products at the MLP
// product's sgemm rate, every other pass's bytes at memcpy's rate. OpenBLAS's threads spin for a while
// after each call and would take the cores from whatever runs next, so tz_model_bench times everything
// of its own (the gemm, memcpy, the step) before any OpenBLAS call.
#pragma once

#include <cblas.h>

#include <string>
#include <vector>

#include "device/cpu/gemm.hpp"
#include "device/gemm_args.hpp"
#include "model/layer_work.hpp"

namespace tz::bench {

// Times one product (median of `runs` after one warm-up), OpenBLAS's sgemm or tierzero's gemm, on
// operands of small values: `g` gives the sizes, transposes and beta (1 accumulates into C, as the
// weight gradient does; its pointers are replaced); `bias` and `row_sums` add the operands the layer
// passes there (tierzero's gemm only: sgemm has neither).
template <class Median>
double time_product(GemmArgs g, bool bias, bool row_sums, bool openblas, int runs, Median&& median_seconds) {
  const auto M = static_cast<std::size_t>(g.M), N = static_cast<std::size_t>(g.N),
             K = static_cast<std::size_t>(g.K);
  std::vector<float> A(M * K, 0.5f), B(K * N, 0.25f), C(M * N, 0.0f), b(bias ? N : 0, 0.1f),
      sums(row_sums ? M : 0);
  g.A = A.data();
  g.B = B.data();
  g.C = C.data();
  g.bias = bias ? b.data() : nullptr;
  g.a_row_sums = row_sums ? sums.data() : nullptr;
  if (!openblas) return median_seconds(1, runs, [&] { gemm(g); });
  return median_seconds(1, runs, [&] {
    cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
                g.M, g.N, g.K, g.alpha, g.A, g.lda, g.B, g.ldb, g.beta, g.C, g.ldc);
  });
}

// The layer's three products per step (forward, input grad, weight grad; times the layer's count), with
// the arguments the layer builds (device/gemm_args.hpp).
template <class Median>
double time_linear_layer(const LinearLayerWork& l, int N, bool openblas, int runs, Median&& median_seconds) {
  const WeightRef w(static_cast<const float*>(nullptr));
  return l.count * (time_product(linear_forward_gemm(nullptr, nullptr, w, nullptr, N, l.C, l.OC), l.bias,
                                 false, openblas, runs, median_seconds) +
                    time_product(linear_input_grad_gemm(nullptr, nullptr, w, N, l.C, l.OC), false, false,
                                 openblas, runs, median_seconds) +
                    time_product(linear_weight_grad_gemm(nullptr, nullptr, nullptr, nullptr, N, l.C, l.OC),
                                 false, l.bias, openblas, runs, median_seconds));
}

}  // namespace tz::bench
