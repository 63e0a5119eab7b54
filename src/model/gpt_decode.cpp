#include "model/gpt_decode.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "device/cpu/layers.hpp"
#include "model/gpt.hpp"
#include "model/kernel_threads.hpp"
#include "model/rotary_table.hpp"

namespace tz {

GptDecoder::GptDecoder(const ParameterLayout& layout, const float* params, int threads)
    : layout_(layout), params_(params), threads_(threads) {
  const GptConfig& c = layout.config();
  const std::size_t C = c.n_embd, P = c.n_positions, L = c.n_layer,
                    KVD = std::size_t(c.kv_heads()) * c.head_size();
  const std::size_t F = c.mlp_width(), FC = c.mlp == MlpKind::swiglu ? 2 * F : F;
  k_cache_.assign(L * P * KVD, 0.0f);
  v_cache_.assign(L * P * KVD, 0.0f);
  if (c.positions == PositionKind::rotary) {
    RotaryTables t = rotary_tables(c, c.n_positions);
    rot_cos_ = std::move(t.cos);
    rot_sin_ = std::move(t.sin);
  }
  x_.resize(C);
  ln_.resize(C);
  mean_.resize(1);
  rstd_.resize(1);
  qkv_.resize(C + 2 * KVD);
  atty_.resize(C);
  res_.resize(C);
  fch_.resize(FC);
  fch_act_.resize(F);
  logits_.resize(c.vocab_size);
}

void GptDecoder::attend(int layer) {
  const GptConfig& c = layout_.config();
  const std::size_t at = static_cast<std::size_t>(layer) * c.n_positions * c.kv_heads() * c.head_size();
  attention_decode(atty_.data(), qkv_.data(), k_cache_.data() + at, v_cache_.data() + at, pos_, c.n_head,
                   c.kv_heads(), c.head_size());
}

void GptDecoder::norm(float* out, const float* inp, const float* w, const float* b) {
  const GptConfig& c = layout_.config();
  const float eps = static_cast<float>(c.norm_eps);
  if (c.norm == NormKind::rmsnorm)
    rmsnorm_forward(out, rstd_.data(), inp, w, 1, c.n_embd, eps);
  else
    layernorm_forward(out, mean_.data(), rstd_.data(), inp, w, b, 1, c.n_embd, eps);
}

const float* GptDecoder::step(std::int32_t token) {
  const GptConfig& c = layout_.config();
  const int C = c.n_embd, V = c.vocab_size, L = c.n_layer, H = c.n_head, KV = c.kv_heads(), D = c.head_size();
  const int KVD = KV * D, QKV = C + 2 * KVD, F = static_cast<int>(c.mlp_width()), R = c.rotary_dims();
  const bool swiglu = c.mlp == MlpKind::swiglu, parallel = c.residual == ResidualKind::parallel;
  if (pos_ >= c.n_positions)
    fail_input("generation: the model's context holds {} positions (n_positions); no room for another token",
               c.n_positions);
  if (token < 0 || token >= V)
    fail_input("generation: token {} outside the vocabulary of {} tokens", token, V);
  set_kernel_threads(threads_);
  auto range = [&](int r) { return params_ + layout_.range(r).offset; };
  const auto emb = embedding_view(layout_, range(ParameterLayout::embeddings_range()));
  const float* wpe = emb.wpe ? emb.wpe + static_cast<std::size_t>(pos_) * C : nullptr;
  encoder_forward(x_.data(), &token, emb.wte, wpe, 1, 1, C);
  for (int l = 0; l < L; ++l) {
    const auto w = block_view(layout_, range(ParameterLayout::block_range(l)));
    norm(ln_.data(), x_.data(), w.ln1_w, w.ln1_b);
    matmul_forward(qkv_.data(), ln_.data(), w.qkv_w, w.qkv_b, 1, C, QKV);
    if (R > 0) {
      const std::size_t row = static_cast<std::size_t>(pos_) * (R / 2);
      rotary_forward(qkv_.data(), rot_cos_.data() + row, rot_sin_.data() + row, 1, 1, H, KV, D, R);
    }
    const std::size_t at = (static_cast<std::size_t>(l) * c.n_positions + pos_) * KVD;
    std::copy_n(qkv_.data() + C, KVD, k_cache_.data() + at);
    std::copy_n(qkv_.data() + C + KVD, KVD, v_cache_.data() + at);
    attend(l);
    matmul_forward(res_.data(), atty_.data(), w.attn_proj_w, w.attn_proj_b, 1, C, C);
    residual_forward(res_.data(), res_.data(), x_.data(), C);
    norm(ln_.data(), parallel ? x_.data() : res_.data(), w.ln2_w, w.ln2_b);
    matmul_forward(fch_.data(), ln_.data(), w.fc_w, w.fc_b, 1, C, swiglu ? 2 * F : F);
    switch (c.mlp) {
      case MlpKind::gelu_tanh:
        gelu_forward(fch_act_.data(), fch_.data(), F);
        break;
      case MlpKind::gelu_exact:
        gelu_exact_forward(fch_act_.data(), fch_.data(), F);
        break;
      case MlpKind::swiglu:
        swiglu_forward(fch_act_.data(), fch_.data(), 1, F);
        break;
    }
    matmul_forward(x_.data(), fch_act_.data(), w.mlp_proj_w, w.mlp_proj_b, 1, F, C);
    residual_forward(x_.data(), x_.data(), res_.data(), C);
  }
  const auto lnf = final_ln_view(layout_, range(layout_.final_ln_range()));
  norm(ln_.data(), x_.data(), lnf.w, lnf.b);
  const float* head = c.tied_embeddings ? emb.wte : range(layout_.head_range());
  matmul_forward(logits_.data(), ln_.data(), head, nullptr, 1, C, V);
  ++pos_;
  ++computed_;
  return logits_.data();
}

std::vector<float> decode_logits_ref(const ParameterLayout& layout, const float* params,
                                     std::span<const std::int32_t> tokens) {
  const int T = static_cast<int>(tokens.size());
  TZ_CHECK(T >= 1 && T <= layout.config().n_positions, "prefix of {} tokens", T);
  Gpt model(layout.config(), 1, T);
  ResidentParams source(model.layout(), params, nullptr);
  model.forward(source, tokens.data(), nullptr);
  const std::size_t V = layout.config().vocab_size;
  const std::vector<float> logits = model.logits();
  const float* last = logits.data() + static_cast<std::size_t>(T - 1) * V;
  return std::vector<float>(last, last + V);
}

}  // namespace tz
