// tierzero's own single-precision matrix product (row-major), used by every product of the model:
//   C (M x N) = alpha op(A) op(B) + beta C + bias     op(X) = X or X^T, bias a length-N row or null
// with optional row sums of op(A) (the bias gradient of a linear layer comes out of its dW product).
// op(B) may be stored in bf16 (a weight gathered in bf16 by the sharded engine): packing widens it,
// which is exact, so the product equals the one of the widened fp32 matrix bit for bit.
// Kernels for AVX-512, AVX2+FMA and portable C++ are built in and chosen at run time (the fastest
// this CPU runs, or the one set_gemm_isa forces); threads come from the model's pool (parallel_for),
// so the model runs one threading runtime. gemm_ref is the plain triple loop (fp64 sums) it is tested
// against. Results do not depend on the thread count: each element of C is summed by one thread, in
// the same order.
#pragma once

#include <string_view>

#include "core/bf16.hpp"
#include "device/gemm_args.hpp"

namespace tz {

enum class GemmIsa { portable, avx2, avx512 };
std::string_view gemm_isa_name(GemmIsa isa);
bool gemm_isa_supported(GemmIsa isa);  // this CPU runs it
GemmIsa best_gemm_isa();
GemmIsa active_gemm_isa();
void set_gemm_isa(GemmIsa isa);  // InternalError if this CPU cannot run it

void gemm(const GemmArgs& g);
void gemm_ref(const GemmArgs& g);

}  // namespace tz
