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
#include "device/weight_ref.hpp"

namespace tz {

// ---- token + position embedding (encoder.cpp) ----
// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]
void encoder_forward(float* out,                  // (B, T, C)
                     const std::int32_t* tokens,  // (B, T)
                     WeightRef wte,               // (V, C)
                     const float* wpe,            // (P, C), P >= T
                     int B, int T, int C);
// dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:]
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

// ---- causal multi-head self-attention (attention.cpp) ----
// qkv rows hold [q | k | v], each C wide, head h at columns h*hs .. h*hs+hs-1 of its part.
// P[b,h,t,:] = softmax over s <= t of q_t . k_s / sqrt(hs); out[b,t,h*hs:] = sum_s P[b,h,t,s] v_s.
// The fast path is tiled (online softmax over key blocks) and never stores P: it keeps the row
// statistic lse[b,h,t] = log sum_{s<=t} exp(q_t . k_s / sqrt(hs)), from which backward recomputes P.
void attention_forward(float* out,        // (B, T, C)
                       float* lse,        // (B, H, T) row log-sum-exp, kept for backward
                       const float* qkv,  // (B, T, 3C)
                       int B, int T, int C, int H);
// dqkv overwritten; out and lse are attention_forward's.
void attention_backward(float* dqkv,        // (B, T, 3C)
                        const float* dout,  // (B, T, C)
                        const float* qkv,   // (B, T, 3C)
                        const float* out,   // (B, T, C)
                        const float* lse,   // (B, H, T)
                        int B, int T, int C, int H);
// One query at position pos against a KV cache (the decode step of sampling), on the same tiled
// kernel: out (C) = attention of q (C) over keys and values 0..pos, rows of C floats in k_cache and
// v_cache (head h at columns h*hs..).
void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache, int pos, int C,
                      int H);
// The materialised references: att (B, H, T, T) holds P (entries s > t are 0).
void attention_forward_ref(float* out, float* att, const float* qkv, int B, int T, int C, int H);
void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                            int C, int H);

// ---- GELU, tanh form (gelu.cpp) ----
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_forward(float* out, const float* inp, long n);
void gelu_backward(float* dinp, const float* inp, const float* dout, long n);  // dinp overwritten
void gelu_forward_ref(float* out, const float* inp, long n);
void gelu_backward_ref(float* dinp, const float* inp, const float* dout, long n);

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
