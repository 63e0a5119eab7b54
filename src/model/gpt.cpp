#include "model/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/error.hpp"
#include "device/kernels.hpp"
#include "model/kernel_threads.hpp"
#include "model/rotary_table.hpp"

namespace tz {

namespace {

// The sizes every layer call takes, from the config.
struct Shape {
  int N, C, H, KV, D, QKV, F, FC, R;
};
Shape shape_of(const GptConfig& c, int B, int T) {
  const int D = c.head_size(), KV = c.kv_heads(), F = static_cast<int>(c.mlp_width());
  return {B * T,
          c.n_embd,
          c.n_head,
          KV,
          D,
          (c.n_head + 2 * KV) * D,
          F,
          c.mlp == MlpKind::swiglu ? 2 * F : F,
          c.rotary_dims()};
}

// The GELU a product's epilogue can apply (SwiGLU pairs columns F apart, so it stays a separate pass).
std::optional<GeluForm> gelu_form(MlpKind mlp) {
  switch (mlp) {
    case MlpKind::gelu_tanh:
      return GeluForm::tanh;
    case MlpKind::gelu_exact:
      return GeluForm::exact;
    case MlpKind::swiglu:
      break;
  }
  return std::nullopt;
}

}  // namespace

Gpt::Gpt(const GptConfig& config, int B, int T, GptOptions options)
    : layout_(config), B_(B), T_(T), options_(options) {
  if (B <= 0 || T <= 0) fail_input("model: batch ({}) and sequence length ({}) must be positive", B, T);
  if (T > config.n_positions)
    fail_input("model: sequence length {} exceeds n_positions {} of the model config", T, config.n_positions);
  set_kernel_threads(options.threads);
  const Shape s = shape_of(config, B, T);
  const std::size_t N = s.N, C = s.C, L = config.n_layer, V = config.vocab_size, H = s.H, QKV = s.QKV,
                    F = s.F, FC = s.FC;
  const bool swiglu = config.mlp == MlpKind::swiglu;
  const std::size_t per_block = N * (C + QKV + C + C + C + FC + F) + 4 * N + B * H * T;
  const std::size_t kept_blocks = options.recompute ? 1 : L;
  const std::size_t total = (L + 1) * N * C + kept_blocks * per_block + N * C + 2 * N + 2 * N * V + N +
                            N * C + N * C + N * QKV + N * C + N * FC + (swiglu ? N * F : 0);
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
    a.qkv = take(N * QKV);
    a.att_lse = take(B * H * T);
    a.atty = take(N * C);
    a.res2 = take(N * C);
    a.ln2 = take(N * C);
    a.ln2_mean = take(N);
    a.ln2_rstd = take(N);
    a.fch = take(N * FC);
    a.fch_act = take(N * F);
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
  dqkv_ = take(N * QKV);
  datty_ = take(N * C);
  dfch_ = take(N * FC);
  dfch_act_ = swiglu ? take(N * F) : dfch_;  // GELU's backward runs in place
  TZ_CHECK_EQ(static_cast<std::size_t>(p - acts_.data().address()), total);
  tokens_ = DeviceBuffer<std::int32_t>(*acts_.backend(), N);
  targets_ = DeviceBuffer<std::int32_t>(*acts_.backend(), N);
  if (config.positions == PositionKind::rotary) {
    const RotaryTables t = rotary_tables(config, T);
    rotary_ = DeviceBuffer<float>(*acts_.backend(), t.cos.size() + t.sin.size());
    upload(rotary_.data(), t.cos.data(), t.cos.size());
    upload(rotary_.data() + t.cos.size(), t.sin.data(), t.sin.size());
  }
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

WeightRef Gpt::head(const AcquiredParams& p) const {
  if (config().tied_embeddings) return wte(p);
  if (p.b16 == nullptr) return WeightRef(p.f32);  // lm_head.weight is its range's only tensor
  return WeightRef(p.b16);
}

void Gpt::norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b) {
  const int N = B_ * T_, C = config().n_embd;
  const float eps = static_cast<float>(config().norm_eps);
  if (config().norm == NormKind::rmsnorm)
    kernels().rmsnorm_forward(out, rstd, inp, w, N, C, eps);
  else
    kernels().layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps);
}

void Gpt::norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd) {
  const int N = B_ * T_, C = config().n_embd;
  if (config().norm == NormKind::rmsnorm)
    kernels().rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
  else
    kernels().layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void Gpt::activation_forward(float* act, const float* fch) {
  const Shape s = shape_of(config(), B_, T_);
  const long n = static_cast<long>(s.N) * s.F;
  switch (config().mlp) {
    case MlpKind::gelu_tanh:
      kernels().gelu_forward(act, fch, n);
      break;
    case MlpKind::gelu_exact:
      kernels().gelu_exact_forward(act, fch, n);
      break;
    case MlpKind::swiglu:
      kernels().swiglu_forward(act, fch, s.N, s.F);
      break;
  }
}

void Gpt::activation_backward(float* dfch, const float* fch, const float* dact) {
  const Shape s = shape_of(config(), B_, T_);
  const long n = static_cast<long>(s.N) * s.F;
  switch (config().mlp) {
    case MlpKind::gelu_tanh:
      kernels().gelu_backward(dfch, fch, dact, n);
      break;
    case MlpKind::gelu_exact:
      kernels().gelu_exact_backward(dfch, fch, dact, n);
      break;
    case MlpKind::swiglu:
      kernels().swiglu_backward(dfch, fch, dact, s.N, s.F);
      break;
  }
}

void Gpt::block_forward(const BlockParams& p, const float* x_in, const BlockActs& a, float* x_out) {
  const BlockView<const float>& w = p.v;
  const Shape s = shape_of(config(), B_, T_);
  const long NC = static_cast<long>(s.N) * s.C;
  const bool parallel = config().residual == ResidualKind::parallel;
  const bool fuse = options_.fuse_epilogues;
  const std::optional<GeluForm> gelu = gelu_form(config().mlp);
  using S = LayerSlot;
  Kernels& k = kernels();
  timed(S::layernorm, [&] { norm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x_in, w.ln1_w, w.ln1_b); });
  timed(S::qkv, [&] { k.matmul_forward(a.qkv, a.ln1, p.qkv_w, w.qkv_b, s.N, s.C, s.QKV); });
  if (s.R > 0)
    timed(S::attention, [&] {
      const float* cos = rotary_.data().address();
      k.rotary_forward(a.qkv, cos, cos + static_cast<std::size_t>(T_) * (s.R / 2), B_, T_, s.H, s.KV, s.D,
                       s.R);
    });
  timed(S::attention, [&] { k.attention_forward(a.atty, a.att_lse, a.qkv, B_, T_, s.H, s.KV, s.D); });
  if (fuse) {
    timed(S::attn_proj, [&] {
      k.matmul_residual_forward(a.res2, x_in, a.atty, p.attn_proj_w, w.attn_proj_b, s.N, s.C, s.C);
    });
  } else {
    timed(S::attn_proj,
          [&] { k.matmul_forward(a.res2, a.atty, p.attn_proj_w, w.attn_proj_b, s.N, s.C, s.C); });
    timed(S::residual, [&] { k.residual_forward(a.res2, a.res2, x_in, NC); });
  }
  // The MLP reads ln_2 of the attention's output (sequential) or of the block's input (parallel).
  const float* mlp_in = parallel ? x_in : a.res2;
  timed(S::layernorm, [&] { norm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, mlp_in, w.ln2_w, w.ln2_b); });
  if (fuse && gelu) {
    timed(S::fc,
          [&] { k.matmul_gelu_forward(a.fch, a.fch_act, a.ln2, p.fc_w, w.fc_b, s.N, s.C, s.FC, *gelu); });
  } else {
    timed(S::fc, [&] { k.matmul_forward(a.fch, a.ln2, p.fc_w, w.fc_b, s.N, s.C, s.FC); });
    timed(S::gelu, [&] { activation_forward(a.fch_act, a.fch); });
  }
  if (x_out && fuse) {
    timed(S::mlp_proj, [&] {
      k.matmul_residual_forward(x_out, a.res2, a.fch_act, p.mlp_proj_w, w.mlp_proj_b, s.N, s.F, s.C);
    });
  } else if (x_out) {
    timed(S::mlp_proj,
          [&] { k.matmul_forward(x_out, a.fch_act, p.mlp_proj_w, w.mlp_proj_b, s.N, s.F, s.C); });
    timed(S::residual, [&] { k.residual_forward(x_out, x_out, a.res2, NC); });
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

  const int E = ParameterLayout::embeddings_range(), F = layout_.final_ln_range(), Hd = layout_.head_range();
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
  timed(LayerSlot::layernorm, [&] { norm_forward(lnf_, lnf_mean_, lnf_rstd_, x_in_[L], lnf.w, lnf.b); });
  params.release_params(F);

  const WeightRef w_head = head(params.acquire_params(Hd));
  timed(LayerSlot::lm_head, [&] { k.matmul_forward(logits_, lnf_, w_head, nullptr, N, C, V); });
  float loss = std::numeric_limits<float>::quiet_NaN();
  if (targets)
    timed(LayerSlot::cross_entropy, [&] {
      loss = static_cast<float>(
          k.softmax_cross_entropy_forward(losses_, probs_, logits_, targets_.data().address(), N, V));
    });
  params.release_params(Hd);
  return loss;
}

void Gpt::block_backward(const BlockParams& p, const BlockView<float>& g, const float* x_in,
                         const BlockActs& a) {
  const BlockView<const float>& w = p.v;
  const Shape s = shape_of(config(), B_, T_);
  const bool parallel = config().residual == ResidualKind::parallel;
  using S = LayerSlot;
  Kernels& k = kernels();
  // dres holds d x_out, which is also d r (x_out = r + mlp(...)).
  // MLP: mlp = down(act(fc(n_2(m)))), m = r (sequential) or x_in (parallel).
  const std::optional<GeluForm> gelu = gelu_form(config().mlp);
  if (options_.fuse_epilogues && gelu) {
    timed(S::mlp_proj, [&] {
      k.matmul_gelu_backward(dfch_, g.mlp_proj_w, g.mlp_proj_b, dres_, a.fch_act, a.fch, p.mlp_proj_w, s.N,
                             s.F, s.C, *gelu);
    });
  } else {
    timed(S::mlp_proj, [&] {
      k.matmul_backward(dfch_act_, g.mlp_proj_w, g.mlp_proj_b, dres_, a.fch_act, p.mlp_proj_w, s.N, s.F, s.C);
    });
    timed(S::gelu, [&] { activation_backward(dfch_, a.fch, dfch_act_); });
  }
  timed(S::fc, [&] { k.matmul_backward(dln_, g.fc_w, g.fc_b, dfch_, a.ln2, p.fc_w, s.N, s.C, s.FC); });
  // Sequential: n_2's input is r, so d r += its backward now, before the attention half reads d r.
  // Parallel: n_2's input is x_in; its backward accumulates into d x_in after the attention half has
  // read d r (= d x_out) alone.
  auto ln2_backward = [&](const float* inp) {
    timed(S::layernorm,
          [&] { norm_backward(dres_, g.ln2_w, g.ln2_b, dln_, inp, w.ln2_w, a.ln2_mean, a.ln2_rstd); });
  };
  if (!parallel) ln2_backward(a.res2);
  // Attention half: r = x_in + proj(attn(rot(qkv(n_1(x_in))))).
  timed(S::attn_proj, [&] {
    k.matmul_backward(datty_, g.attn_proj_w, g.attn_proj_b, dres_, a.atty, p.attn_proj_w, s.N, s.C, s.C);
  });
  timed(S::attention,
        [&] { k.attention_backward(dqkv_, datty_, a.qkv, a.atty, a.att_lse, B_, T_, s.H, s.KV, s.D); });
  if (s.R > 0)
    timed(S::attention, [&] {
      const float* cos = rotary_.data().address();
      k.rotary_backward(dqkv_, cos, cos + static_cast<std::size_t>(T_) * (s.R / 2), B_, T_, s.H, s.KV, s.D,
                        s.R);
    });
  if (parallel) ln2_backward(x_in);  // dln is free again once d ln_2 is consumed
  timed(S::qkv, [&] { k.matmul_backward(dln_, g.qkv_w, g.qkv_b, dqkv_, a.ln1, p.qkv_w, s.N, s.C, s.QKV); });
  timed(S::layernorm,
        [&] { norm_backward(dres_, g.ln1_w, g.ln1_b, dln_, x_in, w.ln1_w, a.ln1_mean, a.ln1_rstd); });
}

void Gpt::backward(ParamSource& params, float grad_scale) {
  TZ_CHECK(have_targets_, "backward needs a forward with targets");
  const GptConfig& c = config();
  const int N = B_ * T_, C = c.n_embd, V = c.vocab_size, L = c.n_layer;
  const int E = ParameterLayout::embeddings_range(), F = layout_.final_ln_range(), Hd = layout_.head_range();
  set_kernel_threads(options_.threads);
  Kernels& k = kernels();

  // LM head: logits = lnf W^T (W = wte or lm_head). dlogits reuses the logits buffer.
  float* dlogits = logits_;
  backward_pass_ = true;
  timed(LayerSlot::cross_entropy, [&] {
    k.softmax_cross_entropy_backward(dlogits, probs_, targets_.data().address(),
                                     grad_scale / static_cast<float>(N), N, V);
  });
  const WeightRef w_head = head(params.acquire_params(Hd));
  float* dhead = params.grad_buffer(Hd);  // wte's gradient is at the embeddings range's start
  timed(LayerSlot::lm_head, [&] { k.matmul_backward(dln_, dhead, nullptr, dlogits, lnf_, w_head, N, C, V); });
  params.release_params(Hd);
  if (Hd != E) params.grads_ready(Hd);

  auto lnf = final_ln_view(layout_, params.acquire_params(F).f32);
  auto dlnf = final_ln_view(layout_, params.grad_buffer(F));
  acts_.backend()->fill_bytes(dres_, 0, static_cast<std::size_t>(N) * C * sizeof(float));
  timed(LayerSlot::layernorm,
        [&] { norm_backward(dres_, dlnf.w, dlnf.b, dln_, x_in_[L], lnf.w, lnf_mean_, lnf_rstd_); });
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

  // The encoder's backward needs no parameters; an untied model acquires its range here, as the
  // schedule (range_schedule.hpp) has it, since the LM head did not.
  if (Hd != E) params.acquire_params(E);
  auto demb = embedding_view(layout_, params.grad_buffer(E));
  timed(LayerSlot::encoder,
        [&] { k.encoder_backward(demb.wte, demb.wpe, dres_, tokens_.data().address(), B_, T_, C, V); });
  if (Hd != E) params.release_params(E);
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
