#include "model/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "device/kernels.hpp"
#include "model/kernel_threads.hpp"

namespace tz {

Gpt::Gpt(const GptConfig& config, int B, int T, GptOptions options)
    : layout_(config), B_(B), T_(T), options_(options) {
  if (B <= 0 || T <= 0) fail_input("model: batch ({}) and sequence length ({}) must be positive", B, T);
  if (T > config.n_positions)
    fail_input("model: sequence length {} exceeds n_positions {} of the model config", T, config.n_positions);
  set_kernel_threads(options.threads);
  const std::size_t N = static_cast<std::size_t>(B) * T, C = config.n_embd, L = config.n_layer,
                    V = config.vocab_size, H = config.n_head;
  const std::size_t per_block = N * (C + 3 * C + C + C + C + 4 * C + 4 * C) + 4 * N + B * H * T;
  const std::size_t kept_blocks = options.recompute ? 1 : L;
  const std::size_t total = (L + 1) * N * C + kept_blocks * per_block + N * C + 2 * N + 2 * N * V + N +
                            N * C + N * C + 3 * N * C + N * C + 4 * N * C;
  acts_ = DeviceBuffer<float>(backend(options.device), total);  // zeroed
  float* p = acts_.data().address();  // device addresses from here on: only kernels read them
  auto take = [&](std::size_t n) {
    float* r = p;
    p += n;
    return r;
  };
  for (std::size_t l = 0; l <= L; ++l) x_in_.push_back(take(N * C));
  for (std::size_t l = 0; l < kept_blocks; ++l) {
    BlockActs a;
    a.ln1 = take(N * C);
    a.ln1_mean = take(N);
    a.ln1_rstd = take(N);
    a.qkv = take(3 * N * C);
    a.att_lse = take(B * H * T);
    a.atty = take(N * C);
    a.res2 = take(N * C);
    a.ln2 = take(N * C);
    a.ln2_mean = take(N);
    a.ln2_rstd = take(N);
    a.fch = take(4 * N * C);
    a.fch_gelu = take(4 * N * C);
    blocks_.push_back(a);
  }
  lnf_ = take(N * C);
  lnf_mean_ = take(N);
  lnf_rstd_ = take(N);
  logits_ = take(N * V);
  probs_ = take(N * V);
  losses_ = take(N);
  dres_ = take(N * C);
  dln_ = take(N * C);
  dqkv_ = take(3 * N * C);
  datty_ = take(N * C);
  dfch_ = take(4 * N * C);
  TZ_CHECK_EQ(static_cast<std::size_t>(p - acts_.data().address()), total);
  tokens_ = DeviceBuffer<std::int32_t>(*acts_.backend(), N);
  targets_ = DeviceBuffer<std::int32_t>(*acts_.backend(), N);
}

Gpt::BlockParams Gpt::block_params(const AcquiredParams& p) const {
  const BlockView<const float> v = block_view(layout_, p.f32);
  if (p.b16 == nullptr) return {v, v.qkv_w, v.attn_proj_w, v.fc_w, v.mlp_proj_w};
  const BlockView<const bf16> h = block_view(layout_, p.b16);
  return {v, h.qkv_w, h.attn_proj_w, h.fc_w, h.mlp_proj_w};
}

WeightRef Gpt::wte(const AcquiredParams& p) const {
  if (p.b16 == nullptr) return embedding_view(layout_, p.f32).wte;
  return embedding_view(layout_, p.b16).wte;
}

void Gpt::block_forward(const BlockParams& p, const float* x_in, const BlockActs& a, float* x_out) {
  const BlockView<const float>& w = p.v;
  const int N = B_ * T_, C = config().n_embd, H = config().n_head;
  using S = LayerSlot;
  Kernels& k = kernels();
  timed(S::layernorm,
        [&] { k.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x_in, w.ln1_w, w.ln1_b, N, C, 1e-5f); });
  timed(S::qkv, [&] { k.matmul_forward(a.qkv, a.ln1, p.qkv_w, w.qkv_b, N, C, 3 * C); });
  timed(S::attention, [&] { k.attention_forward(a.atty, a.att_lse, a.qkv, B_, T_, H, H, C / H); });
  timed(S::attn_proj, [&] { k.matmul_forward(a.res2, a.atty, p.attn_proj_w, w.attn_proj_b, N, C, C); });
  timed(S::residual, [&] { k.residual_forward(a.res2, a.res2, x_in, static_cast<long>(N) * C); });
  timed(S::layernorm,
        [&] { k.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2_w, w.ln2_b, N, C, 1e-5f); });
  timed(S::fc, [&] { k.matmul_forward(a.fch, a.ln2, p.fc_w, w.fc_b, N, C, 4 * C); });
  timed(S::gelu, [&] { k.gelu_forward(a.fch_gelu, a.fch, static_cast<long>(N) * 4 * C); });
  if (x_out) {
    timed(S::mlp_proj, [&] { k.matmul_forward(x_out, a.fch_gelu, p.mlp_proj_w, w.mlp_proj_b, N, 4 * C, C); });
    timed(S::residual, [&] { k.residual_forward(x_out, x_out, a.res2, static_cast<long>(N) * C); });
  }
}

float Gpt::forward(ParamSource& params, const std::int32_t* tokens, const std::int32_t* targets) {
  const GptConfig& c = config();
  const int N = B_ * T_, C = c.n_embd, V = c.vocab_size, L = c.n_layer;
  for (int i = 0; i < N; ++i)
    TZ_CHECK(tokens[i] >= 0 && tokens[i] < V, "token {} at {} outside vocabulary {}", tokens[i], i, V);
  upload(tokens_.data(), tokens, static_cast<std::size_t>(N));
  if (targets)
    upload(targets_.data(), targets, static_cast<std::size_t>(N));
  else if (have_targets_)  // a forward without targets reads zero ids (they were zeroed at allocation)
    acts_.backend()->fill_bytes(targets_.data().address(), 0, targets_.bytes());
  have_targets_ = targets != nullptr;
  Kernels& k = kernels();
  set_kernel_threads(options_.threads);

  const int E = ParameterLayout::embeddings_range(), F = layout_.final_ln_range();
  AcquiredParams e = params.acquire_params(E);
  timed(LayerSlot::encoder, [&] {
    k.encoder_forward(x_in_[0], tokens_.data().address(), wte(e), embedding_view(layout_, e.f32).wpe, B_, T_,
                      C, V);
  });
  params.release_params(E);

  for (int l = 0; l < L; ++l) {
    const int r = ParameterLayout::block_range(l);
    block_forward(block_params(params.acquire_params(r)), x_in_[l], acts_for(l), x_in_[l + 1]);
    params.release_params(r);
  }

  auto lnf = final_ln_view(layout_, params.acquire_params(F).f32);
  timed(LayerSlot::layernorm,
        [&] { k.layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, x_in_[L], lnf.w, lnf.b, N, C, 1e-5f); });
  params.release_params(F);

  e = params.acquire_params(E);
  timed(LayerSlot::lm_head, [&] { k.matmul_forward(logits_, lnf_, wte(e), nullptr, N, C, V); });
  float loss = std::numeric_limits<float>::quiet_NaN();
  if (targets)
    timed(LayerSlot::cross_entropy, [&] {
      loss = static_cast<float>(
          k.softmax_cross_entropy_forward(losses_, probs_, logits_, targets_.data().address(), N, V));
    });
  params.release_params(E);
  return loss;
}

void Gpt::block_backward(const BlockParams& p, const BlockView<float>& g, const float* x_in,
                         const BlockActs& a) {
  const BlockView<const float>& w = p.v;
  const int N = B_ * T_, C = config().n_embd, H = config().n_head;
  using S = LayerSlot;
  Kernels& k = kernels();
  // MLP half: x_out = res2 + mlp_proj(gelu(fc(ln_2(res2)))); dres holds d x_out.
  timed(S::mlp_proj, [&] {
    k.matmul_backward(dfch_, g.mlp_proj_w, g.mlp_proj_b, dres_, a.fch_gelu, p.mlp_proj_w, N, 4 * C, C);
  });
  timed(S::gelu, [&] { k.gelu_backward(dfch_, a.fch, dfch_, static_cast<long>(N) * 4 * C); });
  timed(S::fc, [&] { k.matmul_backward(dln_, g.fc_w, g.fc_b, dfch_, a.ln2, p.fc_w, N, C, 4 * C); });
  timed(S::layernorm, [&] {
    k.layernorm_backward(dres_, g.ln2_w, g.ln2_b, dln_, a.res2, w.ln2_w, a.ln2_mean, a.ln2_rstd, N, C);
  });
  // Attention half: res2 = x_in + proj(attn(qkv(ln_1(x_in)))); dres now holds d res2.
  timed(S::attn_proj, [&] {
    k.matmul_backward(datty_, g.attn_proj_w, g.attn_proj_b, dres_, a.atty, p.attn_proj_w, N, C, C);
  });
  timed(S::attention,
        [&] { k.attention_backward(dqkv_, datty_, a.qkv, a.atty, a.att_lse, B_, T_, H, H, C / H); });
  timed(S::qkv, [&] { k.matmul_backward(dln_, g.qkv_w, g.qkv_b, dqkv_, a.ln1, p.qkv_w, N, C, 3 * C); });
  timed(S::layernorm, [&] {
    k.layernorm_backward(dres_, g.ln1_w, g.ln1_b, dln_, x_in, w.ln1_w, a.ln1_mean, a.ln1_rstd, N, C);
  });
}

void Gpt::backward(ParamSource& params, float grad_scale) {
  TZ_CHECK(have_targets_, "backward needs a forward with targets");
  const GptConfig& c = config();
  const int N = B_ * T_, C = c.n_embd, V = c.vocab_size, L = c.n_layer;
  const int E = ParameterLayout::embeddings_range(), F = layout_.final_ln_range();
  set_kernel_threads(options_.threads);
  Kernels& k = kernels();

  // LM head: logits = lnf wte^T. dlogits reuses the logits buffer.
  float* dlogits = logits_;
  backward_pass_ = true;
  timed(LayerSlot::cross_entropy, [&] {
    k.softmax_cross_entropy_backward(dlogits, probs_, targets_.data().address(),
                                     grad_scale / static_cast<float>(N), N, V);
  });
  const WeightRef head = wte(params.acquire_params(E));
  auto demb = embedding_view(layout_, params.grad_buffer(E));
  timed(LayerSlot::lm_head,
        [&] { k.matmul_backward(dln_, demb.wte, nullptr, dlogits, lnf_, head, N, C, V); });
  params.release_params(E);

  auto lnf = final_ln_view(layout_, params.acquire_params(F).f32);
  auto dlnf = final_ln_view(layout_, params.grad_buffer(F));
  acts_.backend()->fill_bytes(dres_, 0, static_cast<std::size_t>(N) * C * sizeof(float));
  timed(LayerSlot::layernorm, [&] {
    k.layernorm_backward(dres_, dlnf.w, dlnf.b, dln_, x_in_[L], lnf.w, lnf_mean_, lnf_rstd_, N, C);
  });
  params.release_params(F);
  params.grads_ready(F);

  for (int l = L - 1; l >= 0; --l) {
    const int r = ParameterLayout::block_range(l);
    const BlockParams w = block_params(params.acquire_params(r));
    auto g = block_view(layout_, params.grad_buffer(r));
    if (options_.recompute) {
      backward_pass_ = false;
      block_forward(w, x_in_[l], acts_for(l), nullptr);
      backward_pass_ = true;
    }
    block_backward(w, g, x_in_[l], acts_for(l));
    params.release_params(r);
    params.grads_ready(r);
  }

  timed(LayerSlot::encoder,
        [&] { k.encoder_backward(demb.wte, demb.wpe, dres_, tokens_.data().address(), B_, T_, C, V); });
  backward_pass_ = false;
  params.grads_ready(E);
}

std::vector<float> Gpt::logits() const {
  return download(DevicePtr<const float>(acts_.backend(), logits_),
                  static_cast<std::size_t>(B_) * T_ * config().vocab_size);
}

std::vector<float> Gpt::losses() const {
  return download(DevicePtr<const float>(acts_.backend(), losses_), static_cast<std::size_t>(B_) * T_);
}

}  // namespace tz
