#include "model/gpt_decode.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "device/cpu/layers.hpp"
#include "model/gpt.hpp"
#include "model/kernel_threads.hpp"

namespace tz {

GptDecoder::GptDecoder(const ParameterLayout& layout, const float* params, int threads)
    : layout_(layout), params_(params), threads_(threads) {
  const GptConfig& c = layout.config();
  const std::size_t C = c.n_embd, P = c.n_positions, L = c.n_layer;
  k_cache_.assign(L * P * C, 0.0f);
  v_cache_.assign(L * P * C, 0.0f);
  x_.resize(C);
  ln_.resize(C);
  mean_.resize(1);
  rstd_.resize(1);
  qkv_.resize(3 * C);
  atty_.resize(C);
  res_.resize(C);
  fch_.resize(4 * C);
  fch_gelu_.resize(4 * C);
  logits_.resize(c.vocab_size);
}

void GptDecoder::attend(int layer) {
  const GptConfig& c = layout_.config();
  const std::size_t at = static_cast<std::size_t>(layer) * c.n_positions * c.n_embd;
  attention_decode(atty_.data(), qkv_.data(), k_cache_.data() + at, v_cache_.data() + at, pos_, c.n_head,
                   c.n_head, c.n_embd / c.n_head);
}

const float* GptDecoder::step(std::int32_t token) {
  const GptConfig& c = layout_.config();
  const int C = c.n_embd, V = c.vocab_size, L = c.n_layer;
  if (pos_ >= c.n_positions)
    fail_input("generation: the model's context holds {} positions (n_positions); no room for another token",
               c.n_positions);
  if (token < 0 || token >= V)
    fail_input("generation: token {} outside the vocabulary of {} tokens", token, V);
  set_kernel_threads(threads_);
  auto range = [&](int r) { return params_ + layout_.range(r).offset; };
  const auto emb = embedding_view(layout_, range(ParameterLayout::embeddings_range()));
  encoder_forward(x_.data(), &token, emb.wte, emb.wpe + static_cast<std::size_t>(pos_) * C, 1, 1, C);
  for (int l = 0; l < L; ++l) {
    const auto w = block_view(layout_, range(ParameterLayout::block_range(l)));
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), w.ln1_w, w.ln1_b, 1, C, 1e-5f);
    matmul_forward(qkv_.data(), ln_.data(), w.qkv_w, w.qkv_b, 1, C, 3 * C);
    const std::size_t at = (static_cast<std::size_t>(l) * c.n_positions + pos_) * C;
    std::copy_n(qkv_.data() + C, C, k_cache_.data() + at);
    std::copy_n(qkv_.data() + 2 * C, C, v_cache_.data() + at);
    attend(l);
    matmul_forward(res_.data(), atty_.data(), w.attn_proj_w, w.attn_proj_b, 1, C, C);
    residual_forward(res_.data(), res_.data(), x_.data(), C);
    layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), res_.data(), w.ln2_w, w.ln2_b, 1, C, 1e-5f);
    matmul_forward(fch_.data(), ln_.data(), w.fc_w, w.fc_b, 1, C, 4 * C);
    gelu_forward(fch_gelu_.data(), fch_.data(), 4L * C);
    matmul_forward(x_.data(), fch_gelu_.data(), w.mlp_proj_w, w.mlp_proj_b, 1, 4 * C, C);
    residual_forward(x_.data(), x_.data(), res_.data(), C);
  }
  const auto lnf = final_ln_view(layout_, range(layout_.final_ln_range()));
  layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), lnf.w, lnf.b, 1, C, 1e-5f);
  matmul_forward(logits_.data(), ln_.data(), emb.wte, nullptr, 1, C, V);
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
