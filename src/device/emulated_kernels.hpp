// The emulated backend's kernel table (emulated_backend.hpp): each entry finds every buffer it is
// given in the backend's live allocations (its full extent: n elements, a matrix's rows at its
// leading dimension, a block-quantized buffer's bytes), untags the addresses, and runs the cpu
// backend's kernel on them. So its results are the cpu backend's bit for bit, and a kernel handed a
// host pointer, a freed buffer or a buffer too short is an InternalError naming the address.
#pragma once

#include "device/cpu/cpu_kernels.hpp"
#include "device/kernels.hpp"

namespace tz {

class EmulatedKernels final : public Kernels {
 public:
  explicit EmulatedKernels(const Backend& memory) : memory_(memory) {}

  void narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) override;
  void widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) override;
  void reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a, DevicePtr<const std::byte> b,
                  std::size_t n, DType dtype) override;
  void accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) override;
  void narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) override;
  double sum_of_squares(DevicePtr<const float> x, std::size_t n) override;
  AdamWStateBound adamw_update(DevicePtr<float> params, DevicePtr<const float> grads, DevicePtr<float> m,
                               DevicePtr<float> v, std::span<const DecaySegment> segments, std::size_t n,
                               int step, const AdamWParams& hp, float grad_scale) override;
  std::size_t adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                    DevicePtr<const float> m, DevicePtr<const float> v,
                                    std::span<const DecaySegment> segments, std::size_t n, int step,
                                    const AdamWParams& hp, float grad_scale) override;
  QuantStats quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count, DType dtype,
                      const QuantOptions& opts) override;
  void dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q, std::size_t count,
                  const QuantOptions& opts) override;
  void dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                      const QuantOptions& opts) override;
  void gemm(const GemmArgs& args) override;
  void encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe, int B, int T,
                       int C, int V) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                        int C, int V) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C, float eps) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                        const float* rstd, int N, int C) override;
  void matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N, int C,
                      int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       WeightRef weight, int N, int C, int OC) override;
  void matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight, const float* bias,
                           int N, int C, int OC, GeluForm form) override;
  void matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* act,
                            const float* pre, WeightRef weight, int N, int C, int OC, GeluForm form) override;
  void matmul_residual_forward(float* out, const float* residual, const float* inp, WeightRef weight,
                               const float* bias, int N, int C, int OC) override;
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                         int D) override;
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                          const float* lse, int B, int T, int H, int KV, int D) override;
  void rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                      int R) override;
  void rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                       int R) override;
  void gelu_forward(float* out, const float* inp, long n) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, long n) override;
  void gelu_exact_forward(float* out, const float* inp, long n) override;
  void gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) override;
  void swiglu_forward(float* out, const float* inp, int N, int F) override;
  void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) override;
  void residual_forward(float* out, const float* a, const float* b, long n) override;
  double softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                       const std::int32_t* targets, int N, int V) override;
  void softmax_cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                                      float dloss, int N, int V) override;

 private:
  // The host view of `count` elements at p (checked against the allocation p falls in).
  template <typename T>
  DevicePtr<T> host(DevicePtr<T> p, std::size_t count) const;
  template <typename T>
  T* host(T* p, std::size_t count) const;
  WeightRef host(WeightRef w, std::size_t count) const;

  const Backend& memory_;
  CpuKernels cpu_;
};

}  // namespace tz
