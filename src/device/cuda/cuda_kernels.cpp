#include "device/cuda/cuda_kernels.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "device/cpu/adamw.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/cpu/layers.hpp"
#include "device/cuda/cublas_handle.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {

// One cuBLAS handle per thread, on the thread's stream (a handle is not shared between threads).
cublasHandle_t cublas_handle() {
  struct Handle {
    cublasHandle_t h = nullptr;
    Handle() {
      check_cublas(cublasCreate(&h), "create handle");
      check_cublas(cublasSetStream(h, cudaStreamPerThread), "set stream");
      check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "math mode");  // fp32, no TF32
    }
    ~Handle() { cublasDestroy(h); }
  };
  thread_local Handle handle;
  return handle.h;
}

CublasStreamGuard::CublasStreamGuard(cudaStream_t stream) : handle_(cublas_handle()) {
  check_cublas(cublasGetStream(handle_, &previous_), "get stream");
  if (previous_ != stream) check_cublas(cublasSetStream(handle_, stream), "set stream");
}

CublasStreamGuard::~CublasStreamGuard() {
  cudaStream_t now = nullptr;
  if (cublasGetStream(handle_, &now) == CUBLAS_STATUS_SUCCESS && now != previous_)
    cublasSetStream(handle_, previous_);
}

}  // namespace tz::cuda

namespace tz {
namespace {

cudaStream_t stream() {
  return cudaStreamPerThread;
}

// Waits for the calling thread's stream: the entry has finished when it returns.
void finish(const char* what) {
  cuda::check(cudaStreamSynchronize(stream()), what);
}

cuda::bf16_bits* bits(bf16* p) {
  return reinterpret_cast<cuda::bf16_bits*>(p);
}
const cuda::bf16_bits* bits(const bf16* p) {
  return reinterpret_cast<const cuda::bf16_bits*>(p);
}

// Elements a row-major matrix of `rows` x `cols` at leading dimension `ld` spans.
std::size_t matrix_extent(int rows, int cols, int ld) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>(rows - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(cols);
}

// Scratch device memory for one entry, freed on the stream.
class Scratch {
 public:
  explicit Scratch(std::size_t bytes) {
    if (bytes > 0) cuda::check(cudaMallocAsync(&p_, bytes, stream()), "scratch");
  }
  ~Scratch() {
    if (p_) cudaFreeAsync(p_, stream());
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// The epilogue of GemmArgs as the separate pointwise kernel after the product (not fused on this
// backend yet): dense matrices only (every leading dimension N).
void enqueue_epilogue(const GemmArgs& g) {
  if (g.epilogue == GemmEpilogue::none || g.M == 0 || g.N == 0) return;
  const long n = static_cast<long>(g.M) * g.N;
  const bool act = g.epilogue == GemmEpilogue::gelu_tanh || g.epilogue == GemmEpilogue::gelu_exact;
  TZ_CHECK(g.ldc == g.N && (act ? g.epi_out != nullptr && g.ld_epi_out == g.N
                                : g.epi_in != nullptr && g.epi_in != g.C && g.ld_epi_in == g.N),
           "gemm epilogue on the cuda backend: dense matrices only (ldc {}, N {})", g.ldc, g.N);
  switch (g.epilogue) {
    case GemmEpilogue::none:
      break;
    case GemmEpilogue::gelu_tanh:
      cuda::gelu_forward(stream(), g.epi_out, g.C, n);
      break;
    case GemmEpilogue::gelu_exact:
      cuda::gelu_exact_forward(stream(), g.epi_out, g.C, n);
      break;
    case GemmEpilogue::gelu_tanh_grad:
      cuda::gelu_backward(stream(), g.C, g.epi_in, g.C, n);
      break;
    case GemmEpilogue::gelu_exact_grad:
      cuda::gelu_exact_backward(stream(), g.C, g.epi_in, g.C, n);
      break;
    case GemmEpilogue::add:
      cuda::residual_forward(stream(), g.C, g.C, g.epi_in, n);
      break;
  }
}

// The row-major product of GemmArgs as cuBLAS's column-major one: C^T = op(B)^T op(A)^T, so B goes
// first and the dimensions swap (M <-> N). Enqueued only.
void enqueue_gemm(const GemmArgs& g) {
  TZ_CHECK(g.M >= 0 && g.N >= 0 && g.K >= 0, "gemm sizes {} x {} x {}", g.M, g.N, g.K);
  TZ_CHECK(!(g.B && g.B16) && (g.B || g.B16 || g.K == 0 || g.M == 0 || g.N == 0), "gemm needs one B");
  const int min_lda = std::max(1, g.trans_a ? g.M : g.K), min_ldb = std::max(1, g.trans_b ? g.K : g.N),
            min_ldc = std::max(1, g.N);
  TZ_CHECK_GE(g.lda, min_lda);
  TZ_CHECK_GE(g.ldb, min_ldb);
  TZ_CHECK_GE(g.ldc, min_ldc);
  if (g.M == 0 || g.N == 0) return;
  const float* B = g.B;
  Scratch widened(g.B16 ? matrix_extent(g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N, g.ldb) * sizeof(float)
                        : 0);
  if (g.B16) {
    cuda::widen_matrix(stream(), widened.as<float>(), bits(g.B16),
                       matrix_extent(g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N, g.ldb));
    B = widened.as<float>();
  }
  cuda::check_cublas(cublasSgemm(cuda::cublas_handle(), g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, B, g.ldb,
                                 g.A, g.lda, &g.beta, g.C, g.ldc),
                     "sgemm");
  if (g.bias) cuda::add_bias_rows(stream(), g.C, g.bias, g.M, g.N, g.ldc);
  if (g.a_row_sums) cuda::add_row_sums(stream(), g.a_row_sums, g.A, g.trans_a, g.M, g.K, g.lda);
  enqueue_epilogue(g);
  // `widened` is freed on the stream after the product that reads it.
}

void check_segments(std::span<const DecaySegment> segments, std::size_t n) {
  std::size_t covered = 0;
  for (const auto& s : segments) {
    TZ_CHECK_EQ(s.offset, covered);
    covered += s.numel;
  }
  TZ_CHECK_EQ(covered, n);
}

// The decay runs and the step's constants for both flags, as the cpu backend computes them.
struct AdamWLaunch {
  std::vector<cuda::DecayRun> runs;
  cuda::AdamWConstants constants[2];
  AdamWLaunch(std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
              float grad_scale) {
    check_segments(segments, n);
    TZ_CHECK_GE(step, 1);
    for (const auto& s : segments)
      if (s.numel > 0) runs.push_back({s.offset, s.numel, s.decay ? 1 : 0});
    for (int decay = 0; decay < 2; ++decay) {
      const AdamWStepConstants k = adamw_step_constants(hp, decay != 0, step, grad_scale);
      constants[decay] = {k.decay_factor, k.l2,         k.b1,
                          k.b2,           k.step_size,  k.inv_sqrt_bc2,
                          k.eps,          k.grad_scale, adamw_uses_l2(hp, decay != 0) ? 1 : 0};
    }
  }
};

}  // namespace

void CudaKernels::narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) {
  backend_.bind();
  cuda::narrow_to_bf16(stream(), bits(out.address()), in.address(), n);
  finish("narrow_to_bf16");
}

void CudaKernels::widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) {
  backend_.bind();
  cuda::widen_from_bf16(stream(), out.address(), bits(in.address()), n);
  finish("widen_from_bf16");
}

void CudaKernels::reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a,
                             DevicePtr<const std::byte> b, std::size_t n, DType dtype) {
  backend_.bind();
  cuda::reduce_add(stream(), out.address(), a.address(), b.address(), n, dtype);
  finish("reduce_add");
}

void CudaKernels::accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) {
  backend_.bind();
  cuda::accumulate(stream(), acc.address(), x.address(), n, dtype);
  finish("accumulate");
}

void CudaKernels::narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) {
  backend_.bind();
  cuda::narrow_and_clear(stream(), bits(out.address()), in.address(), n);
  finish("narrow_and_clear");
}

double CudaKernels::sum_of_squares(DevicePtr<const float> x, std::size_t n) {
  backend_.bind();
  return cuda::sum_of_squares(stream(), x.address(), n);
}

AdamWStateBound CudaKernels::adamw_update(DevicePtr<float> params, DevicePtr<const float> grads,
                                          DevicePtr<float> m, DevicePtr<float> v,
                                          std::span<const DecaySegment> segments, std::size_t n, int step,
                                          const AdamWParams& hp, float grad_scale) {
  backend_.bind();
  const AdamWLaunch launch(segments, n, step, hp, grad_scale);
  const cuda::AdamWBound b =
      cuda::adamw_update(stream(), params.address(), grads.address(), m.address(), v.address(),
                         launch.runs.data(), launch.runs.size(), n, launch.constants);
  return {.abs_p = b.abs_p, .abs_m = b.abs_m, .v = b.v, .v_min = b.v_min};
}

std::size_t CudaKernels::adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                               DevicePtr<const float> m, DevicePtr<const float> v,
                                               std::span<const DecaySegment> segments, std::size_t n,
                                               int step, const AdamWParams& hp, float grad_scale) {
  backend_.bind();
  const AdamWLaunch launch(segments, n, step, hp, grad_scale);
  return cuda::adamw_nonfinite_count(stream(), params.address(), grads.address(), m.address(), v.address(),
                                     launch.runs.data(), launch.runs.size(), n, launch.constants);
}

QuantStats CudaKernels::quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count,
                                 DType dtype, const QuantOptions& opts) {
  check_quant_call("quantize", opts, count, x.address(), q.address());
  check_quantizable("quantize", dtype);
  backend_.bind();
  return cuda::quantize(stream(), q.address(), x.address(), count, dtype, opts);
}

void CudaKernels::dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q,
                             std::size_t count, const QuantOptions& opts) {
  check_quant_call("dequantize", opts, count, q.address(), y.address());
  check_quantizable("dequantize", dtype);
  backend_.bind();
  cuda::dequantize(stream(), y.address(), dtype, q.address(), count, opts);
  finish("dequantize");
}

void CudaKernels::dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                                 const QuantOptions& opts) {
  check_quant_call("dequantize_add", opts, count, q.address(), acc.address());
  backend_.bind();
  cuda::dequantize_add(stream(), acc.address(), q.address(), count, opts);
  finish("dequantize_add");
}

void CudaKernels::gemm(const GemmArgs& args) {
  backend_.bind();
  enqueue_gemm(args);
  finish("gemm");
}

void CudaKernels::encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe,
                                  int B, int T, int C, int V) {
  backend_.bind();
  cuda::encoder_forward(stream(), out, tokens, wte.f32, bits(wte.b16), wpe, B, T, C, V);
  finish("encoder_forward");
}

void CudaKernels::encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                   int B, int T, int C, int V) {
  backend_.bind();
  cuda::encoder_backward(stream(), dwte, dwpe, dout, tokens, B, T, C, V);
  finish("encoder_backward");
}

void CudaKernels::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int N, int C, float eps) {
  backend_.bind();
  cuda::layernorm_forward(stream(), out, mean, rstd, inp, weight, bias, N, C, eps);
  finish("layernorm_forward");
}

void CudaKernels::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int N, int C) {
  backend_.bind();
  cuda::layernorm_backward(stream(), dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  finish("layernorm_backward");
}

void CudaKernels::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N,
                                  int C, float eps) {
  backend_.bind();
  cuda::rmsnorm_forward(stream(), out, rstd, inp, weight, N, C, eps);
  finish("rmsnorm_forward");
}

void CudaKernels::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                   const float* weight, const float* rstd, int N, int C) {
  backend_.bind();
  cuda::rmsnorm_backward(stream(), dinp, dweight, dout, inp, weight, rstd, N, C);
  finish("rmsnorm_backward");
}

// The linear layer as every backend runs it (device/gemm_args.hpp): the same three products.
void CudaKernels::matmul_forward(float* out, const float* inp, WeightRef weight, const float* bias, int N,
                                 int C, int OC) {
  backend_.bind();
  enqueue_gemm(linear_forward_gemm(out, inp, weight, bias, N, C, OC));
  finish("matmul_forward");
}

void CudaKernels::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, WeightRef weight, int N, int C, int OC) {
  backend_.bind();
  enqueue_gemm(linear_input_grad_gemm(dinp, dout, weight, N, C, OC));
  if (dweight)
    enqueue_gemm(linear_weight_grad_gemm(dweight, dbias, dout, inp, N, C, OC));
  else if (dbias)
    cuda::add_row_sums(stream(), dbias, dout, true, OC, N, OC);
  finish("matmul_backward");
}

void CudaKernels::matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight,
                                      const float* bias, int N, int C, int OC, GeluForm form) {
  backend_.bind();
  enqueue_gemm(linear_gelu_forward_gemm(pre, act, inp, weight, bias, N, C, OC, form));
  finish("matmul_gelu_forward");
}

void CudaKernels::matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                                       const float* act, const float* pre, WeightRef weight, int N, int C,
                                       int OC, GeluForm form) {
  backend_.bind();
  enqueue_gemm(linear_gelu_input_grad_gemm(dpre, dout, pre, weight, N, C, OC, form));
  if (dweight)
    enqueue_gemm(linear_weight_grad_gemm(dweight, dbias, dout, act, N, C, OC));
  else if (dbias)
    cuda::add_row_sums(stream(), dbias, dout, true, OC, N, OC);
  finish("matmul_gelu_backward");
}

void CudaKernels::matmul_residual_forward(float* out, const float* residual, const float* inp,
                                          WeightRef weight, const float* bias, int N, int C, int OC) {
  backend_.bind();
  enqueue_gemm(linear_residual_forward_gemm(out, residual, inp, weight, bias, N, C, OC));
  finish("matmul_residual_forward");
}

void CudaKernels::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                                    int D) {
  check_attention_heads("attention_forward", H, KV, D);
  backend_.bind();
  cuda::attention_forward(stream(), out, lse, qkv, B, T, H, KV, D);
  finish("attention_forward");
}

void CudaKernels::attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                     const float* lse, int B, int T, int H, int KV, int D) {
  check_attention_heads("attention_backward", H, KV, D);
  backend_.bind();
  cuda::attention_backward(stream(), dqkv, dout, qkv, out, lse, B, T, H, KV, D);
  finish("attention_backward");
}

void CudaKernels::rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                                 int D, int R) {
  check_rotary_dims("rotary_forward", H, KV, D, R);
  backend_.bind();
  cuda::rotary_forward(stream(), qkv, cos, sin, B, T, H, KV, D, R);
  finish("rotary_forward");
}

void CudaKernels::rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H,
                                  int KV, int D, int R) {
  check_rotary_dims("rotary_backward", H, KV, D, R);
  backend_.bind();
  cuda::rotary_backward(stream(), dqkv, cos, sin, B, T, H, KV, D, R);
  finish("rotary_backward");
}

void CudaKernels::gelu_forward(float* out, const float* inp, long n) {
  backend_.bind();
  cuda::gelu_forward(stream(), out, inp, n);
  finish("gelu_forward");
}

void CudaKernels::gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  backend_.bind();
  cuda::gelu_backward(stream(), dinp, inp, dout, n);
  finish("gelu_backward");
}

void CudaKernels::gelu_exact_forward(float* out, const float* inp, long n) {
  backend_.bind();
  cuda::gelu_exact_forward(stream(), out, inp, n);
  finish("gelu_exact_forward");
}

void CudaKernels::gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) {
  backend_.bind();
  cuda::gelu_exact_backward(stream(), dinp, inp, dout, n);
  finish("gelu_exact_backward");
}

void CudaKernels::swiglu_forward(float* out, const float* inp, int N, int F) {
  backend_.bind();
  cuda::swiglu_forward(stream(), out, inp, N, F);
  finish("swiglu_forward");
}

void CudaKernels::swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
  backend_.bind();
  cuda::swiglu_backward(stream(), dinp, inp, dout, N, F);
  finish("swiglu_backward");
}

void CudaKernels::residual_forward(float* out, const float* a, const float* b, long n) {
  backend_.bind();
  cuda::residual_forward(stream(), out, a, b, n);
  finish("residual_forward");
}

double CudaKernels::softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                                  const std::int32_t* targets, int N, int V) {
  backend_.bind();
  return cuda::softmax_cross_entropy_forward(stream(), losses, probs, logits, targets, N, V);
}

void CudaKernels::softmax_cross_entropy_backward(float* dlogits, const float* probs,
                                                 const std::int32_t* targets, float dloss, int N, int V) {
  backend_.bind();
  cuda::softmax_cross_entropy_backward(stream(), dlogits, probs, targets, dloss, N, V);
  finish("softmax_cross_entropy_backward");
}

}  // namespace tz
