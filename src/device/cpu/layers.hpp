// The GPT layers as plain functions (llm.c style): outputs first, then inputs, then sizes; a shape
// comment beside each buffer. All fp32. N = B*T rows, C channels, OC output channels, V vocabulary,
// H heads, hs = C/H head size. Conventions for backward:
//   - parameter gradients (dweight, dbias, dwte, ...) are ACCUMULATED (+=);
//   - input gradients are OVERWRITTEN (=), except where a function says it accumulates.
// Each function that has a fast path (BLAS, AVX2, threads) has a plain *_ref twin with the same
// contract; the tests compare them and check the _ref versions by finite differences.
#pragma once

#include <cstdint>

#include "core/bf16.hpp"
#include "device/gemm_args.hpp"
#include "device/weight_ref.hpp"

namespace tz {

// ---- token + position embedding (encoder.cpp) ----
// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]
void encoder_forward(float* out,                  // (B, T, C)
                     const std::int32_t* tokens,  // (B, T)
                     WeightRef wte,               // (V, C)
                     const float* wpe,            // (P, C), P >= T; null: no position table (rotary)
                     int B, int T, int C);
// dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:] (dwpe null: skipped)
void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                      int C);

// ---- LayerNorm (layernorm.cpp) ----
// out = (inp - mean) * rstd * weight + bias, per row, rstd = 1 / sqrt(var + eps) (PyTorch's default
// eps is 1e-5; GPT-NeoX configs name theirs). bias null: a LayerNorm without bias (out has no + bias).
void layernorm_forward(float* out,           // (N, C)
                       float* mean,          // (N)
                       float* rstd,          // (N)
                       const float* inp,     // (N, C)
                       const float* weight,  // (C)
                       const float* bias,    // (C) or null
                       int N, int C, float eps);
// dinp is ACCUMULATED (+=): the LayerNorm input is the residual stream, whose gradient sums.
// dbias null: the LayerNorm has no bias (nothing is summed for it).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);
void layernorm_forward_ref(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, int N, int C, float eps);
void layernorm_backward_ref(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N, int C);

// ---- RMSNorm (rmsnorm.cpp), Llama's norm ----
// out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps), per row; rstd kept for backward.
void rmsnorm_forward(float* out,           // (N, C)
                     float* rstd,          // (N)
                     const float* inp,     // (N, C)
                     const float* weight,  // (C)
                     int N, int C, float eps);
// dinp is ACCUMULATED (+=), as layernorm_backward's (the input is the residual stream).
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C);
void rmsnorm_forward_ref(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                         float eps);
void rmsnorm_backward_ref(float* dinp, float* dweight, const float* dout, const float* inp,
                          const float* weight, const float* rstd, int N, int C);

// ---- linear layer (matmul.cpp) ----
// out = inp weight^T + bias (weight stored (OC, C) as nn.Linear); bias may be null.
void matmul_forward(float* out,         // (N, OC)
                    const float* inp,   // (N, C)
                    WeightRef weight,   // (OC, C)
                    const float* bias,  // (OC) or null
                    int N, int C, int OC);
// dinp = dout weight (overwritten); dweight += dout^T inp; dbias += column sums of dout (if non-null).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     WeightRef weight, int N, int C, int OC);
void matmul_forward_ref(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                        int OC);
void matmul_backward_ref(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int N, int C, int OC);
// Fused linear layers (device/gemm_args.hpp's epilogues): each equals the unfused sequence beside it
// bit for bit, one pass over the product's output fewer.
//   = matmul_forward(pre, ...), then gelu_forward(act, pre) (or gelu_exact_forward)
void matmul_gelu_forward(float* pre, float* act, const float* inp, WeightRef weight, const float* bias, int N,
                         int C, int OC, GeluForm form);
//   = matmul_backward(dact, dweight, dbias, dout, act, ...), then gelu_backward(dpre, pre, dact): dpre
//   (N, C) is the gradient of the pre-activation; act the GELU of pre, this product's input
void matmul_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout, const float* act,
                          const float* pre, WeightRef weight, int N, int C, int OC, GeluForm form);
//   = matmul_forward(out, ...), then residual_forward(out, out, residual); out must not alias residual
void matmul_residual_forward(float* out, const float* residual, const float* inp, WeightRef weight,
                             const float* bias, int N, int C, int OC);

// ---- causal self-attention, grouped-query heads (attention.cpp) ----
// qkv rows hold [q (H D) | k (KV D) | v (KV D)]: H query heads and KV key/value heads of D floats, KV
// dividing H; query head h reads key/value head h / (H / KV) (Hugging Face's repeat_kv). KV == H is
// multi-head attention (C = H D). With q_t, k_s, v_s the rows of query head h and of its key/value head:
// P[b,h,t,:] = softmax over s <= t of q_t . k_s / sqrt(D); out[b,t,h*D:] = sum_s P[b,h,t,s] v_s.
// The fast path is tiled (online softmax over key blocks) and never stores P: it keeps the row
// statistic lse[b,h,t] = log sum_{s<=t} exp(q_t . k_s / sqrt(D)), from which backward recomputes P.
// KV not dividing H (or a size below 1) is an InputError (check_attention_heads, which every backend's
// entry runs).
void check_attention_heads(const char* what, int H, int KV, int D);
void attention_forward(float* out,        // (B, T, H D)
                       float* lse,        // (B, H, T) row log-sum-exp, kept for backward
                       const float* qkv,  // (B, T, (H + 2 KV) D)
                       int B, int T, int H, int KV, int D);
// dqkv overwritten; dk and dv of a key/value head sum over the query heads of its group; out and lse
// are attention_forward's.
void attention_backward(float* dqkv,        // (B, T, (H + 2 KV) D)
                        const float* dout,  // (B, T, H D)
                        const float* qkv,   // (B, T, (H + 2 KV) D)
                        const float* out,   // (B, T, H D)
                        const float* lse,   // (B, H, T)
                        int B, int T, int H, int KV, int D);
// One query at position pos against a KV cache (the decode step of sampling), on the same tiled
// kernel: out (H D) = attention of q (H D) over keys and values 0..pos, rows of KV D floats in k_cache
// and v_cache (key/value head j at columns j*D..).
void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache, int pos, int H,
                      int KV, int D);
// The materialised references: att (B, H, T, T) holds P (entries s > t are 0).
void attention_forward_ref(float* out, float* att, const float* qkv, int B, int T, int H, int KV, int D);
void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                            int H, int KV, int D);

// ---- rotary position embedding (rotary.cpp) ----
// In place on qkv rows [q (H D) | k (KV D) | v (KV D)], Hugging Face's half-split convention
// (rotate_half): in every query head and key head the first R dims (R even, 0 <= R <= D) are rotated,
// the rest pass: for j < R/2, with c = cos[t, j], s = sin[t, j] (t the row's position in its sequence),
//   x[j]' = x[j] c - x[j + R/2] s;   x[j + R/2]' = x[j + R/2] c + x[j] s.
// v is untouched. An odd R, or R outside [0, D], is an InputError (check_rotary_dims).
void check_rotary_dims(const char* what, int H, int KV, int D, int R);
void rotary_forward(float* qkv,        // (B, T, (H + 2 KV) D)
                    const float* cos,  // (T, R/2): row t for position t
                    const float* sin,  // (T, R/2)
                    int B, int T, int H, int KV, int D, int R);
// The transpose (rotation by -angle): dqkv's q and k heads become the gradient w.r.t. the unrotated
// q, k, in place; v columns untouched.
void rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                     int R);
void rotary_forward_ref(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                        int R);
void rotary_backward_ref(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                         int R);

// ---- GELU, tanh form (gelu.cpp) ----
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_forward(float* out, const float* inp, long n);
void gelu_backward(float* dinp, const float* inp, const float* dout, long n);  // dinp may alias dout
// The same on the calling thread only (the gemm epilogue runs them on tile rows): each element's result
// is the one gelu_forward / gelu_backward give it, bit for bit, wherever it sits.
void gelu_forward_serial(float* out, const float* inp, long n);
void gelu_backward_serial(float* dinp, const float* inp, const float* dout, long n);
void gelu_forward_ref(float* out, const float* inp, long n);
void gelu_backward_ref(float* dinp, const float* inp, const float* dout, long n);
// One vector body on its own, serial: width 8 (AVX2 + FMA) or 16 (AVX-512F); an InputError where the
// CPU has not that width. The serial and threaded entry points pick the widest; tests compare both.
void gelu_forward_width(float* out, const float* inp, long n, int width);
void gelu_backward_width(float* dinp, const float* inp, const float* dout, long n, int width);

// ---- GELU, exact form (gelu_exact.cpp): PyTorch's nn.GELU() default, Pythia's "gelu" ----
// out = 0.5 x (1 + erf(x / sqrt 2))
void gelu_exact_forward(float* out, const float* inp, long n);
void gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n);  // dinp may alias dout
void gelu_exact_forward_serial(float* out, const float* inp, long n);
void gelu_exact_backward_serial(float* dinp, const float* inp, const float* dout, long n);
void gelu_exact_forward_ref(float* out, const float* inp, long n);
void gelu_exact_backward_ref(float* dinp, const float* inp, const float* dout, long n);

// ---- SwiGLU (swiglu.cpp), Llama's MLP activation ----
// inp rows are [gate (F) | up (F)]; out[i, j] = silu(gate[i, j]) * up[i, j], silu(g) = g / (1 + e^-g).
void swiglu_forward(float* out,        // (N, F)
                    const float* inp,  // (N, 2F)
                    int N, int F);
// dinp (N, 2F) overwritten: [d gate | d up].
void swiglu_backward(float* dinp, const float* inp, const float* dout /* (N, F) */, int N, int F);
void swiglu_forward_ref(float* out, const float* inp, int N, int F);
void swiglu_backward_ref(float* dinp, const float* inp, const float* dout, int N, int F);

// ---- residual add (residual.cpp) ----
void residual_forward(float* out, const float* a, const float* b, long n);  // out = a + b

// ---- softmax + cross-entropy, fused (cross_entropy.cpp) ----
// probs = softmax(logits) per row; losses[i] = -log probs[i, targets[i]]. Returns the mean loss (fp64 sum).
double softmax_cross_entropy_forward(float* losses,                // (N)
                                     float* probs,                 // (N, V)
                                     const float* logits,          // (N, V)
                                     const std::int32_t* targets,  // (N)
                                     int N, int V);
// dlogits = (probs - onehot(targets)) * dloss, dloss = d(mean loss scale) per row (overwritten).
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                                    float dloss, int N, int V);
double softmax_cross_entropy_forward_ref(float* losses, float* probs, const float* logits,
                                         const std::int32_t* targets, int N, int V);
void softmax_cross_entropy_backward_ref(float* dlogits, const float* probs, const std::int32_t* targets,
                                        float dloss, int N, int V);

}  // namespace tz
