// The CUDA kernels of the backend's table (device/kernels.hpp), as host functions that enqueue them
// on `stream`. Pointers are device addresses. They return once the work is enqueued, except those
// that return a value (or report bad input), which wait for their stream; CudaKernels
// (cuda_kernels.hpp) waits for the stream after every entry, so an entry has finished when it
// returns, as on the other backends. Each file's comment says how the result compares with the cpu
// backend's: bitwise where the arithmetic is the same operations in the same order, within a stated
// tolerance where an order of summation differs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/quant_format.hpp"

namespace tz::cuda {

using bf16_bits = std::uint16_t;  // a tz::bf16, passed as its bits

// ---- conversions and elementwise passes (elementwise.cu): bitwise the cpu backend ----
void narrow_to_bf16(cudaStream_t s, bf16_bits* out, const float* in, std::size_t n);
void widen_from_bf16(cudaStream_t s, float* out, const bf16_bits* in, std::size_t n);
// out = a + b in dtype (f32, bf16 added in fp32 and rounded once, f64); out may alias a or b.
void reduce_add(cudaStream_t s, void* out, const void* a, const void* b, std::size_t n, DType dtype);
void accumulate(cudaStream_t s, float* acc, const void* x, std::size_t n, DType dtype);
void narrow_and_clear(cudaStream_t s, bf16_bits* out, float* in, std::size_t n);
double sum_of_squares(cudaStream_t s, const float* x, std::size_t n);
// Widens a bf16 matrix for cuBLAS (exact).
void widen_matrix(cudaStream_t s, float* out, const bf16_bits* in, std::size_t n);
// C[m, :] += bias for M rows of N at leading dimension ldc; a_row_sums[m] += sum_k op(A)[m, k].
void add_bias_rows(cudaStream_t s, float* C, const float* bias, int M, int N, int ldc);
void add_row_sums(cudaStream_t s, float* row_sums, const float* A, bool trans_a, int M, int K, int lda);

// ---- AdamW (adamw.cu): bitwise the cpu backend (device/cpu/adamw.hpp defines the arithmetic) ----
// The step's constants for one decay flag, computed on the host by the cpu backend's own function.
struct AdamWConstants {
  float decay_factor, l2, b1, b2, step_size, inv_sqrt_bc2, eps, grad_scale;
  int use_l2;  // Adam's L2 term enters the gradient (not decoupled, decaying, weight decay != 0)
};
// A run of elements sharing one decay flag: constants[decay] applies.
struct DecayRun {
  std::size_t offset, numel;
  int decay;
};
struct AdamWBound {
  float abs_p, abs_m, v, v_min;  // NaN in a field where a NaN was written
};
// `runs` is host memory (copied for the kernel). Both wait for the stream.
AdamWBound adamw_update(cudaStream_t s, float* params, const float* grads, float* m, float* v,
                        const DecayRun* runs, std::size_t run_count, std::size_t n,
                        const AdamWConstants constants[2]);
std::size_t adamw_nonfinite_count(cudaStream_t s, const float* params, const float* grads, const float* m,
                                  const float* v, const DecayRun* runs, std::size_t run_count, std::size_t n,
                                  const AdamWConstants constants[2]);

// ---- block quantization (block_quantize.cu): bitwise the cpu reference (core/quant_format.hpp) ----
// Returns {blocks, nonfinite_blocks}; waits for the stream.
QuantStats quantize(cudaStream_t s, std::uint8_t* q, const void* x, std::size_t count, DType dtype,
                    const QuantOptions& opts);
void dequantize(cudaStream_t s, void* y, DType dtype, const std::uint8_t* q, std::size_t count,
                const QuantOptions& opts);
void dequantize_add(cudaStream_t s, float* acc, const std::uint8_t* q, std::size_t count,
                    const QuantOptions& opts);

// ---- the model's layers (layers are defined by device/cpu/layers.hpp; files named below) ----
// encoder.cu. wte is fp32 (wte_f32) or bf16 (wte_b16), the other null. A token outside [0, V) is an
// InternalError naming it (checked on the device, read back).
void encoder_forward(cudaStream_t s, float* out, const std::int32_t* tokens, const float* wte_f32,
                     const bf16_bits* wte_b16, const float* wpe, int B, int T, int C, int V);
void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                      int B, int T, int C, int V);
// layernorm.cu. bias null: no bias; dbias null in backward: nothing summed for it.
void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C, float eps);
void layernorm_backward(cudaStream_t s, float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int N,
                        int C);
// attention.cu: grouped-query heads (qkv rows [q (H D) | k (KV D) | v (KV D)], KV dividing H: the
// caller checks it, check_attention_heads).
void attention_forward(cudaStream_t s, float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                       int D);
void attention_backward(cudaStream_t s, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, int H, int KV, int D);
// rotary.cu: in place on qkv's q and k heads; R even and in [0, D] (the caller checks it,
// check_rotary_dims).
void rotary_forward(cudaStream_t s, float* qkv, const float* cos, const float* sin, int B, int T, int H,
                    int KV, int D, int R);
void rotary_backward(cudaStream_t s, float* dqkv, const float* cos, const float* sin, int B, int T, int H,
                     int KV, int D, int R);
// layernorm.cu (RMSNorm beside LayerNorm: they share the row reductions)
void rmsnorm_forward(cudaStream_t s, float* out, float* rstd, const float* inp, const float* weight, int N,
                     int C, float eps);
void rmsnorm_backward(cudaStream_t s, float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C);
// pointwise.cu
void gelu_forward(cudaStream_t s, float* out, const float* inp, long n);
void gelu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, long n);
void gelu_exact_forward(cudaStream_t s, float* out, const float* inp, long n);
void gelu_exact_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, long n);
// pointwise.cu: inp (N, 2F) rows [gate | up], out (N, F); dinp (N, 2F) overwritten.
void swiglu_forward(cudaStream_t s, float* out, const float* inp, int N, int F);
void swiglu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, int N, int F);
void residual_forward(cudaStream_t s, float* out, const float* a, const float* b, long n);
// cross_entropy.cu. The forward returns the mean loss (an fp64 sum over the rows in order, / N) and
// waits for the stream; a target outside [0, V) is an InternalError naming it.
double softmax_cross_entropy_forward(cudaStream_t s, float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, int N, int V);
void softmax_cross_entropy_backward(cudaStream_t s, float* dlogits, const float* probs,
                                    const std::int32_t* targets, float dloss, int N, int V);

}  // namespace tz::cuda
