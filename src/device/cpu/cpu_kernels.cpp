// The cpu backend's kernels: each entry calls the CPU path on the host addresses the cpu backend's
// device addresses are.
#include "device/cpu/cpu_kernels.hpp"

#include <algorithm>

#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "device/cpu/adamw.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/reduce.hpp"
#include "device/cpu/sum_of_squares.hpp"

namespace tz {

void CpuKernels::narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) {
  bf16_from_floats(out.address(), in.address(), n);
}

void CpuKernels::widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) {
  floats_from_bf16(out.address(), in.address(), n);
}

void CpuKernels::reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a,
                            DevicePtr<const std::byte> b, std::size_t n, DType dtype) {
  tz::reduce_add(out.address(), a.address(), b.address(), n, dtype);
}

void CpuKernels::accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) {
  float* g = acc.address();
  if (dtype == DType::f32) {
    const float* v = reinterpret_cast<const float*>(x.address());
    for (std::size_t i = 0; i < n; ++i) g[i] += v[i];
  } else {
    TZ_CHECK(dtype == DType::bf16, "accumulate of {}", dtype_name(dtype));
    const bf16* v = reinterpret_cast<const bf16*>(x.address());
    for (std::size_t i = 0; i < n; ++i) g[i] += to_float(v[i]);
  }
}

void CpuKernels::narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) {
  // In pieces of 16 KiB, which stay in L1 between the narrowing and the clearing.
  constexpr std::size_t kPiece = 4096;
  bf16* o = out.address();
  float* x = in.address();
  for (std::size_t i = 0; i < n; i += kPiece) {
    const std::size_t m = std::min(kPiece, n - i);
    bf16_from_floats(o + i, x + i, m);
    std::fill_n(x + i, m, 0.0f);
  }
}

double CpuKernels::sum_of_squares(DevicePtr<const float> x, std::size_t n) {
  return tz::sum_of_squares(x.address(), n);
}

AdamWStateBound CpuKernels::adamw_update(DevicePtr<float> params, DevicePtr<const float> grads,
                                         DevicePtr<float> m, DevicePtr<float> v,
                                         std::span<const DecaySegment> segments, std::size_t n, int step,
                                         const AdamWParams& hp, float grad_scale) {
  return tz::adamw_update(params.address(), grads.address(), m.address(), v.address(), segments, n, step, hp,
                          grad_scale);
}

std::size_t CpuKernels::adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                              DevicePtr<const float> m, DevicePtr<const float> v,
                                              std::span<const DecaySegment> segments, std::size_t n, int step,
                                              const AdamWParams& hp, float grad_scale) {
  return tz::adamw_nonfinite_count(params.address(), grads.address(), m.address(), v.address(), segments, n,
                                   step, hp, grad_scale);
}

QuantStats CpuKernels::quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count,
                                DType dtype, const QuantOptions& opts) {
  return tz::quantize(x.address(), dtype, count, q.address(), opts);
}

void CpuKernels::dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q,
                            std::size_t count, const QuantOptions& opts) {
  tz::dequantize(q.address(), count, y.address(), dtype, opts);
}

void CpuKernels::dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                                const QuantOptions& opts) {
  tz::dequantize_add(q.address(), count, acc.address(), opts);
}

void CpuKernels::gemm(const GemmArgs& args) {
  tz::gemm(args);
}

namespace {
// Every token id inside the vocabulary: the embedding rows they index exist (an InternalError naming
// the first one that does not, as the GPU backend reports it, instead of an access out of bounds).
void check_token_ids(const std::int32_t* tokens, int B, int T, int V) {
  const std::size_t n = static_cast<std::size_t>(B) * T;
  for (std::size_t i = 0; i < n; ++i)
    TZ_CHECK(tokens[i] >= 0 && tokens[i] < V, "token id {} at row {} outside the vocabulary of {}", tokens[i],
             i, V);
}
}  // namespace

void CpuKernels::encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe,
                                 int B, int T, int C, int V) {
  check_token_ids(tokens, B, T, V);
  tz::encoder_forward(out, tokens, wte, wpe, B, T, C);
}

void CpuKernels::encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                  int B, int T, int C, int V) {
  check_token_ids(tokens, B, T, V);
  tz::encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
}

void CpuKernels::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int N, int C, float eps) {
  tz::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
}

void CpuKernels::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int N, int C) {
  tz::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void CpuKernels::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                                 float eps) {
  tz::rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
}

void CpuKernels::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int N, int C) {
  tz::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
}

void CpuKernels::matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N,
                                int C, int OC) {
  tz::matmul_forward(out, inp, weight, bias, N, C, OC);
}

void CpuKernels::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, WeightRef weight, int N, int C, int OC) {
  tz::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuKernels::matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight,
                                     const float* bias, int N, int C, int OC, GeluForm form) {
  tz::matmul_gelu_forward(pre, act, inp, weight, bias, N, C, OC, form);
}

void CpuKernels::matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                                      const float* act, const float* pre, WeightRef weight, int N, int C,
                                      int OC, GeluForm form) {
  tz::matmul_gelu_backward(dpre, dweight, dbias, dout, act, pre, weight, N, C, OC, form);
}

void CpuKernels::matmul_residual_forward(float* out, const float* residual, const float* inp,
                                         WeightRef weight, const float* bias, int N, int C, int OC) {
  tz::matmul_residual_forward(out, residual, inp, weight, bias, N, C, OC);
}

void CpuKernels::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                                   int D) {
  tz::attention_forward(out, lse, qkv, B, T, H, KV, D);
}

void CpuKernels::attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                    const float* lse, int B, int T, int H, int KV, int D) {
  tz::attention_backward(dqkv, dout, qkv, out, lse, B, T, H, KV, D);
}

void CpuKernels::rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                                int D, int R) {
  tz::rotary_forward(qkv, cos, sin, B, T, H, KV, D, R);
}

void CpuKernels::rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                                 int D, int R) {
  tz::rotary_backward(dqkv, cos, sin, B, T, H, KV, D, R);
}

void CpuKernels::gelu_forward(float* out, const float* inp, long n) {
  tz::gelu_forward(out, inp, n);
}

void CpuKernels::gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  tz::gelu_backward(dinp, inp, dout, n);
}

void CpuKernels::gelu_exact_forward(float* out, const float* inp, long n) {
  tz::gelu_exact_forward(out, inp, n);
}

void CpuKernels::gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) {
  tz::gelu_exact_backward(dinp, inp, dout, n);
}

void CpuKernels::swiglu_forward(float* out, const float* inp, int N, int F) {
  tz::swiglu_forward(out, inp, N, F);
}

void CpuKernels::swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
  tz::swiglu_backward(dinp, inp, dout, N, F);
}

void CpuKernels::residual_forward(float* out, const float* a, const float* b, long n) {
  tz::residual_forward(out, a, b, n);
}

double CpuKernels::softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                                 const std::int32_t* targets, int N, int V) {
  return tz::softmax_cross_entropy_forward(losses, probs, logits, targets, N, V);
}

void CpuKernels::softmax_cross_entropy_backward(float* dlogits, const float* probs,
                                                const std::int32_t* targets, float dloss, int N, int V) {
  tz::softmax_cross_entropy_backward(dlogits, probs, targets, dloss, N, V);
}

}  // namespace tz
