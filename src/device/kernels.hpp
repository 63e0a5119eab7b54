// A backend's kernel table: every operation the engine, the optimizer and quantization run on device
// data, with its arguments in the backend's memory (backend.hpp). The cpu backend's entries are
// tierzero's CPU paths (device/cpu/: AVX-512, AVX2 or portable, chosen at run time); the emulated
// backend's are the same code behind a translation that checks every buffer against its allocation;
// a GPU backend brings its own (docs/backends.md lists the CUDA counterparts). Each entry documents
// the bytes it reads and writes; results are bitwise the cpu backend's wherever the arithmetic is
// exact, which the tests hold every backend to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/bf16.hpp"
#include "core/dtype.hpp"
#include "core/quant_format.hpp"
#include "device/adamw_args.hpp"
#include "device/decay_segment.hpp"
#include "device/device_buffer.hpp"
#include "device/gemm_args.hpp"
#include "device/weight_ref.hpp"

namespace tz {

class Kernels {
 public:
  virtual ~Kernels() = default;

  // --- conversions and elementwise passes over n elements ---
  // out = in rounded to bf16 (nearest even); reads 4n bytes, writes 2n.
  virtual void narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) = 0;
  // out = in widened (exact); reads 2n, writes 4n.
  virtual void widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) = 0;
  // out = a + b in `dtype` (f32; bf16 added in fp32 and rounded once; f64); out may alias a or b.
  virtual void reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a,
                          DevicePtr<const std::byte> b, std::size_t n, DType dtype) = 0;
  // acc += x, x of `dtype` (f32, or bf16 widened): a reduced gradient accumulated into its shard.
  virtual void accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) = 0;
  // out = narrow(in), then in = 0: a gradient buffer narrowed for its reduction and cleared for the
  // next micro-batch in one pass.
  virtual void narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) = 0;
  // The sum of x[i]^2 in fp64 (a shard's share of the global gradient norm).
  virtual double sum_of_squares(DevicePtr<const float> x, std::size_t n) = 0;

  // --- the optimizer (device/cpu/adamw.hpp defines the arithmetic) ---
  virtual AdamWStateBound adamw_update(DevicePtr<float> params, DevicePtr<const float> grads,
                                       DevicePtr<float> m, DevicePtr<float> v,
                                       std::span<const DecaySegment> segments, std::size_t n, int step,
                                       const AdamWParams& hp, float grad_scale) = 0;
  virtual std::size_t adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                            DevicePtr<const float> m, DevicePtr<const float> v,
                                            std::span<const DecaySegment> segments, std::size_t n, int step,
                                            const AdamWParams& hp, float grad_scale) = 0;

  // --- block quantization (core/quant_format.hpp; device/cpu/block_quantize.hpp) ---
  // q: quantized_bytes(count, opts) bytes; x: count elements of dtype (f32 or bf16).
  virtual QuantStats quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count,
                              DType dtype, const QuantOptions& opts) = 0;
  virtual void dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q,
                          std::size_t count, const QuantOptions& opts) = 0;
  virtual void dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                              const QuantOptions& opts) = 0;

  // --- matrix product (device/gemm_args.hpp): every matrix address in this backend's memory ---
  virtual void gemm(const GemmArgs& args) = 0;

  // --- the model's layers (device/cpu/layers.hpp defines each one's arithmetic and conventions:
  // parameter gradients accumulate, input gradients are overwritten unless said otherwise). Every
  // pointer is a device address of this backend; N = B*T rows, C channels, OC output channels, V the
  // vocabulary (wte's rows), H heads. ---
  virtual void encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe, int B,
                               int T, int C, int V) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                int B, int T, int C, int V) = 0;
  // LayerNorm with its eps; bias null: no bias (backward then gets dbias null).
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int N, int C, float eps) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean, const float* rstd,
                                  int N, int C) = 0;
  // RMSNorm (Llama): rstd (N) kept for backward; dinp accumulates (+=), as layernorm_backward's.
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                               float eps) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int N, int C) = 0;
  virtual void matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N, int C,
                              int OC) = 0;
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               WeightRef weight, int N, int C, int OC) = 0;
  // The fused linear layers (device/gemm_args.hpp epilogues), each bitwise the unfused sequence:
  // pre = inp W^T + b and act = gelu(pre) (matmul_forward + gelu_forward / gelu_exact_forward);
  virtual void matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight,
                                   const float* bias, int N, int C, int OC, GeluForm form) = 0;
  // dpre (N, C) = (dout W) gelu'(pre), dW += dout^T act, dbias += (matmul_backward + gelu_backward);
  virtual void matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                                    const float* act, const float* pre, WeightRef weight, int N, int C,
                                    int OC, GeluForm form) = 0;
  // out = inp W^T + b + residual (matmul_forward + residual_forward); out must not alias residual.
  virtual void matmul_residual_forward(float* out, const float* residual, const float* inp, WeightRef weight,
                                       const float* bias, int N, int C, int OC) = 0;
  // Tiled attention with grouped-query heads: qkv rows are [q (H D) | k (KV D) | v (KV D)], KV divides
  // H, query head h reads key/value head h / (H / KV); out (B, T, H D); lse (B, H, T) is the row
  // statistic that backward recomputes P from. KV == H is multi-head attention (C = H D).
  virtual void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                                 int D) = 0;
  // dqkv (B, T, (H + 2 KV) D) overwritten; dk and dv of a key/value head sum over its group's query heads.
  virtual void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                  const float* lse, int B, int T, int H, int KV, int D) = 0;
  // Rotary position embedding in place on qkv's q and k heads (the first R of D dims, Hugging Face's
  // half-split pairs); cos and sin are (T, R/2) tables, row t for position t. Backward is the transpose.
  virtual void rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                              int D, int R) = 0;
  virtual void rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                               int D, int R) = 0;
  virtual void gelu_forward(float* out, const float* inp, long n) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, long n) = 0;
  // Exact GELU, 0.5 x (1 + erf(x / sqrt 2)); dinp may alias dout.
  virtual void gelu_exact_forward(float* out, const float* inp, long n) = 0;
  virtual void gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) = 0;
  // SwiGLU: inp rows (N, 2F) are [gate | up], out (N, F) = silu(gate) up; dinp (N, 2F) overwritten.
  virtual void swiglu_forward(float* out, const float* inp, int N, int F) = 0;
  virtual void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) = 0;
  virtual void residual_forward(float* out, const float* a, const float* b, long n) = 0;
  // Returns the mean loss (an fp64 sum over the rows, divided by N).
  virtual double softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                               const std::int32_t* targets, int N, int V) = 0;
  virtual void softmax_cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                                              float dloss, int N, int V) = 0;
};

// A typed device pointer as bytes (the dtype-generic kernels take these).
template <typename T>
DevicePtr<std::byte> as_bytes(DevicePtr<T> p) {
  return device_cast<std::byte>(p);
}
template <typename T>
DevicePtr<const std::byte> as_bytes(DevicePtr<const T> p) {
  return device_cast<const std::byte>(p);
}

}  // namespace tz
