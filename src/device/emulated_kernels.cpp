#include "device/emulated_kernels.hpp"

#include "core/error.hpp"

namespace tz {
namespace {

// Elements a row-major matrix of `rows` x `cols` at leading dimension `ld` spans.
std::size_t matrix_extent(int rows, int cols, int ld) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>(rows - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(cols);
}

// Floats of a grouped-query qkv of N rows: [q (H D) | k (KV D) | v (KV D)] each. Negative sizes count as
// 0 here (the kernel refuses them with its own error).
std::size_t qkv_floats(std::size_t N, int H, int KV, int D) {
  const long width = (static_cast<long>(H) + 2L * KV) * D;
  return width > 0 ? N * static_cast<std::size_t>(width) : 0;
}

// Floats of one rotary table (T, R/2) (cos or sin); 0 for sizes the kernel refuses.
std::size_t rotary_table_floats(int T, int R) {
  return T > 0 && R > 0 ? static_cast<std::size_t>(T) * static_cast<std::size_t>(R / 2) : 0;
}

}  // namespace

template <typename T>
T* EmulatedKernels::host(T* p, std::size_t count) const {
  if (count == 0) return p;  // nothing is read or written: any address (null included) will do
  using Byte = std::conditional_t<std::is_const_v<T>, const void, void>;
  return static_cast<T*>(memory_.host_address(static_cast<Byte*>(p), count * sizeof(T)));
}

template <typename T>
DevicePtr<T> EmulatedKernels::host(DevicePtr<T> p, std::size_t count) const {
  return {nullptr, host(p.address(), count)};
}

void EmulatedKernels::narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) {
  cpu_.narrow_to_bf16(host(out, n), host(in, n), n);
}

void EmulatedKernels::widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) {
  cpu_.widen_from_bf16(host(out, n), host(in, n), n);
}

void EmulatedKernels::reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a,
                                 DevicePtr<const std::byte> b, std::size_t n, DType dtype) {
  const std::size_t bytes = n * dtype_bytes(dtype);
  cpu_.reduce_add(host(out, bytes), host(a, bytes), host(b, bytes), n, dtype);
}

void EmulatedKernels::accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n,
                                 DType dtype) {
  cpu_.accumulate(host(acc, n), host(x, n * dtype_bytes(dtype)), n, dtype);
}

void EmulatedKernels::narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) {
  cpu_.narrow_and_clear(host(out, n), host(in, n), n);
}

double EmulatedKernels::sum_of_squares(DevicePtr<const float> x, std::size_t n) {
  return cpu_.sum_of_squares(host(x, n), n);
}

AdamWStateBound EmulatedKernels::adamw_update(DevicePtr<float> params, DevicePtr<const float> grads,
                                              DevicePtr<float> m, DevicePtr<float> v,
                                              std::span<const DecaySegment> segments, std::size_t n, int step,
                                              const AdamWParams& hp, float grad_scale) {
  return cpu_.adamw_update(host(params, n), host(grads, n), host(m, n), host(v, n), segments, n, step, hp,
                           grad_scale);
}

std::size_t EmulatedKernels::adamw_nonfinite_count(DevicePtr<const float> params,
                                                   DevicePtr<const float> grads, DevicePtr<const float> m,
                                                   DevicePtr<const float> v,
                                                   std::span<const DecaySegment> segments, std::size_t n,
                                                   int step, const AdamWParams& hp, float grad_scale) {
  return cpu_.adamw_nonfinite_count(host(params, n), host(grads, n), host(m, n), host(v, n), segments, n,
                                    step, hp, grad_scale);
}

QuantStats EmulatedKernels::quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x,
                                     std::size_t count, DType dtype, const QuantOptions& opts) {
  validate_quant_options(opts);  // before quantized_bytes divides by the block size
  return cpu_.quantize(host(q, quantized_bytes(count, opts)), host(x, count * dtype_bytes(dtype)), count,
                       dtype, opts);
}

void EmulatedKernels::dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q,
                                 std::size_t count, const QuantOptions& opts) {
  validate_quant_options(opts);
  cpu_.dequantize(host(y, count * dtype_bytes(dtype)), dtype, host(q, quantized_bytes(count, opts)), count,
                  opts);
}

void EmulatedKernels::dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                                     const QuantOptions& opts) {
  validate_quant_options(opts);
  cpu_.dequantize_add(host(acc, count), host(q, quantized_bytes(count, opts)), count, opts);
}

WeightRef EmulatedKernels::host(WeightRef w, std::size_t count) const {
  if (w.b16) return host(w.b16, count);
  return host(w.f32, count);
}

void EmulatedKernels::encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe,
                                      int B, int T, int C, int V) {
  const std::size_t N = static_cast<std::size_t>(B) * T;
  cpu_.encoder_forward(host(out, N * C), host(tokens, N), host(wte, static_cast<std::size_t>(V) * C),
                       wpe ? host(wpe, static_cast<std::size_t>(T) * C) : nullptr, B, T, C, V);
}

void EmulatedKernels::encoder_backward(float* dwte, float* dwpe, const float* dout,
                                       const std::int32_t* tokens, int B, int T, int C, int V) {
  const std::size_t N = static_cast<std::size_t>(B) * T;
  cpu_.encoder_backward(host(dwte, static_cast<std::size_t>(V) * C),
                        dwpe ? host(dwpe, static_cast<std::size_t>(T) * C) : nullptr, host(dout, N * C),
                        host(tokens, N), B, T, C, V);
}

void EmulatedKernels::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                        const float* weight, const float* bias, int N, int C, float eps) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  cpu_.layernorm_forward(host(out, NC), host(mean, N), host(rstd, N), host(inp, NC), host(weight, C),
                         bias ? host(bias, C) : nullptr, N, C, eps);
}

void EmulatedKernels::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                         const float* inp, const float* weight, const float* mean,
                                         const float* rstd, int N, int C) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  cpu_.layernorm_backward(host(dinp, NC), host(dweight, C), dbias ? host(dbias, C) : nullptr, host(dout, NC),
                          host(inp, NC), host(weight, C), host(mean, N), host(rstd, N), N, C);
}

void EmulatedKernels::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N,
                                      int C, float eps) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  cpu_.rmsnorm_forward(host(out, NC), host(rstd, N), host(inp, NC), host(weight, C), N, C, eps);
}

void EmulatedKernels::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                       const float* weight, const float* rstd, int N, int C) {
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  cpu_.rmsnorm_backward(host(dinp, NC), host(dweight, C), host(dout, NC), host(inp, NC), host(weight, C),
                        host(rstd, N), N, C);
}

void EmulatedKernels::matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N,
                                     int C, int OC) {
  cpu_.matmul_forward(host(out, static_cast<std::size_t>(N) * OC), host(inp, static_cast<std::size_t>(N) * C),
                      host(weight, static_cast<std::size_t>(OC) * C), bias ? host(bias, OC) : nullptr, N, C,
                      OC);
}

void EmulatedKernels::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                      const float* inp, WeightRef weight, int N, int C, int OC) {
  const std::size_t NC = static_cast<std::size_t>(N) * C, W = static_cast<std::size_t>(OC) * C;
  cpu_.matmul_backward(host(dinp, NC), dweight ? host(dweight, W) : nullptr,
                       dbias ? host(dbias, OC) : nullptr, host(dout, static_cast<std::size_t>(N) * OC),
                       host(inp, NC), host(weight, W), N, C, OC);
}

void EmulatedKernels::matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight,
                                          const float* bias, int N, int C, int OC, GeluForm form) {
  const std::size_t NO = static_cast<std::size_t>(N) * OC;
  cpu_.matmul_gelu_forward(host(pre, NO), host(act, NO), host(inp, static_cast<std::size_t>(N) * C),
                           host(weight, static_cast<std::size_t>(OC) * C), bias ? host(bias, OC) : nullptr, N,
                           C, OC, form);
}

void EmulatedKernels::matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                                           const float* act, const float* pre, WeightRef weight, int N, int C,
                                           int OC, GeluForm form) {
  const std::size_t NC = static_cast<std::size_t>(N) * C, W = static_cast<std::size_t>(OC) * C;
  cpu_.matmul_gelu_backward(host(dpre, NC), dweight ? host(dweight, W) : nullptr,
                            dbias ? host(dbias, OC) : nullptr, host(dout, static_cast<std::size_t>(N) * OC),
                            host(act, NC), host(pre, NC), host(weight, W), N, C, OC, form);
}

void EmulatedKernels::matmul_residual_forward(float* out, const float* residual, const float* inp,
                                              WeightRef weight, const float* bias, int N, int C, int OC) {
  const std::size_t NO = static_cast<std::size_t>(N) * OC;
  cpu_.matmul_residual_forward(host(out, NO), host(residual, NO), host(inp, static_cast<std::size_t>(N) * C),
                               host(weight, static_cast<std::size_t>(OC) * C),
                               bias ? host(bias, OC) : nullptr, N, C, OC);
}

void EmulatedKernels::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                                        int D) {
  const std::size_t N = static_cast<std::size_t>(B) * T, Q = qkv_floats(N, H, KV, D);
  cpu_.attention_forward(host(out, N * H * D), host(lse, static_cast<std::size_t>(B) * H * T), host(qkv, Q),
                         B, T, H, KV, D);
}

void EmulatedKernels::attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                         const float* lse, int B, int T, int H, int KV, int D) {
  const std::size_t N = static_cast<std::size_t>(B) * T, Q = qkv_floats(N, H, KV, D), O = N * H * D;
  cpu_.attention_backward(host(dqkv, Q), host(dout, O), host(qkv, Q), host(out, O),
                          host(lse, static_cast<std::size_t>(B) * H * T), B, T, H, KV, D);
}

void EmulatedKernels::rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H,
                                     int KV, int D, int R) {
  const std::size_t Q = qkv_floats(static_cast<std::size_t>(B) * T, H, KV, D),
                    table = rotary_table_floats(T, R);
  cpu_.rotary_forward(host(qkv, Q), host(cos, table), host(sin, table), B, T, H, KV, D, R);
}

void EmulatedKernels::rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H,
                                      int KV, int D, int R) {
  const std::size_t Q = qkv_floats(static_cast<std::size_t>(B) * T, H, KV, D),
                    table = rotary_table_floats(T, R);
  cpu_.rotary_backward(host(dqkv, Q), host(cos, table), host(sin, table), B, T, H, KV, D, R);
}

void EmulatedKernels::gelu_forward(float* out, const float* inp, long n) {
  const auto m = static_cast<std::size_t>(n);
  cpu_.gelu_forward(host(out, m), host(inp, m), n);
}

void EmulatedKernels::gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  const auto m = static_cast<std::size_t>(n);
  cpu_.gelu_backward(host(dinp, m), host(inp, m), host(dout, m), n);
}

void EmulatedKernels::gelu_exact_forward(float* out, const float* inp, long n) {
  const auto m = static_cast<std::size_t>(n);
  cpu_.gelu_exact_forward(host(out, m), host(inp, m), n);
}

void EmulatedKernels::gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) {
  const auto m = static_cast<std::size_t>(n);
  cpu_.gelu_exact_backward(host(dinp, m), host(inp, m), host(dout, m), n);
}

void EmulatedKernels::swiglu_forward(float* out, const float* inp, int N, int F) {
  const std::size_t NF = static_cast<std::size_t>(N) * F;
  cpu_.swiglu_forward(host(out, NF), host(inp, 2 * NF), N, F);
}

void EmulatedKernels::swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
  const std::size_t NF = static_cast<std::size_t>(N) * F;
  cpu_.swiglu_backward(host(dinp, 2 * NF), host(inp, 2 * NF), host(dout, NF), N, F);
}

void EmulatedKernels::residual_forward(float* out, const float* a, const float* b, long n) {
  const auto m = static_cast<std::size_t>(n);
  cpu_.residual_forward(host(out, m), host(a, m), host(b, m), n);
}

double EmulatedKernels::softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                                      const std::int32_t* targets, int N, int V) {
  const std::size_t NV = static_cast<std::size_t>(N) * V;
  return cpu_.softmax_cross_entropy_forward(host(losses, N), host(probs, NV), host(logits, NV),
                                            host(targets, N), N, V);
}

void EmulatedKernels::softmax_cross_entropy_backward(float* dlogits, const float* probs,
                                                     const std::int32_t* targets, float dloss, int N, int V) {
  const std::size_t NV = static_cast<std::size_t>(N) * V;
  cpu_.softmax_cross_entropy_backward(host(dlogits, NV), host(probs, NV), host(targets, N), dloss, N, V);
}

void EmulatedKernels::gemm(const GemmArgs& g) {
  GemmArgs h = g;
  h.A = host(g.A, g.trans_a ? matrix_extent(g.K, g.M, g.lda) : matrix_extent(g.M, g.K, g.lda));
  const std::size_t b = g.trans_b ? matrix_extent(g.N, g.K, g.ldb) : matrix_extent(g.K, g.N, g.ldb);
  if (g.B) h.B = host(g.B, b);
  if (g.B16) h.B16 = host(g.B16, b);
  h.C = host(g.C, matrix_extent(g.M, g.N, g.ldc));
  if (g.bias) h.bias = host(g.bias, static_cast<std::size_t>(g.N));
  if (g.a_row_sums) h.a_row_sums = host(g.a_row_sums, static_cast<std::size_t>(g.M));
  if (g.epi_in) h.epi_in = host(g.epi_in, matrix_extent(g.M, g.N, g.ld_epi_in));
  if (g.epi_out) h.epi_out = host(g.epi_out, matrix_extent(g.M, g.N, g.ld_epi_out));
  cpu_.gemm(h);
}

}  // namespace tz
