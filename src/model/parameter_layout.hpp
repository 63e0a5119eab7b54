// Parameter layout of the model: one flat fp32 buffer cut into RANGES, each range cut into
// TENSORS (as llm.c's ParameterTensors). The sharded engine holds a shard of
// each range (an offset and a length into it), gathers a block's range just before the block runs,
// and reduce-scatters its gradient right after; so each transformer block is one contiguous range.
// GPT-2 (C width, F = 4C MLP width, P positions, V vocabulary):
//
//   range 0        "embeddings"  wte (V, C) token embedding, also the tied LM head; wpe (P, C)
//   range 1 + i    "h.<i>"       block i: ln_1 (C) x2, attn.qkv (3C, C) + (3C), attn.proj (C, C) + (C),
//                                ln_2 (C) x2, mlp.fc (4C, C) + (4C), mlp.proj (C, 4C) + (C)
//   range L + 1    "ln_f"        final LayerNorm weight (C), bias (C)
//
// Other architectures (model/gpt_config.hpp) keep that order and leave out what they do not have:
// wpe with rotary positions; every norm's bias with RMSNorm (or a bias-free LayerNorm); a linear
// layer's bias when its family has none. attn.qkv holds H D query rows then KV D key and KV D value
// rows (grouped-query attention: KV key/value heads); SwiGLU's mlp.fc holds F gate rows then F up
// rows, mlp.proj is its down projection (C, F). An untied LM head is one more range after ln_f:
//   range L + 2    "lm_head"     lm_head.weight (V, C)
// total_numel() equals GptConfig::parameter_count() for every architecture.
//
// Linear weights are stored (out, in) as PyTorch's nn.Linear does. Ranges follow each other with no
// padding; tensors inside a range likewise. Per-tensor properties are data: weight_decay (true for
// matrices: wte, wpe, lm_head and the linear weights; false for biases and norm gains/biases) and
// tied (wte, when the LM head reuses it). The layout is pure: sizes and offsets only, nothing
// allocated, so it describes GPT-NeoX-20B as cheaply as the tiny test model. Sizes are size_t (a
// 20B model has more than 2^31 elements). The typed views below are GPT-2's: the model's layers
// cover every family: a tensor the architecture leaves out is a null pointer in its view.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

struct ParamRange {
  std::string name;
  std::size_t offset = 0;  // into the flat buffer, elements
  std::size_t numel = 0;
};

struct ParamTensor {
  std::string name;  // "wte", "h.3.attn.qkv.weight", "ln_f.bias", ...
  int range = 0;
  std::size_t offset = 0;        // into the flat buffer, elements
  std::size_t range_offset = 0;  // into its range, elements
  std::size_t numel = 0;
  std::vector<std::size_t> shape;
  bool weight_decay = false;
  bool tied = false;
  // Read by the model only through WeightRef (model/layers.hpp): a matrix product's weight or
  // embedding rows (wte and the linear weights), so a ParamSource may serve it in bf16.
  bool weight_matrix = false;
};

// The tensors of one transformer block, in range order; index into ParameterLayout::block_tensor_offsets().
enum class BlockTensor : int {
  ln1_w,
  ln1_b,
  qkv_w,
  qkv_b,
  attn_proj_w,
  attn_proj_b,
  ln2_w,
  ln2_b,
  fc_w,
  fc_b,
  mlp_proj_w,
  mlp_proj_b,
  count
};

class ParameterLayout {
 public:
  explicit ParameterLayout(const GptConfig& config);

  const GptConfig& config() const { return config_; }

  int num_ranges() const { return static_cast<int>(ranges_.size()); }
  static constexpr int embeddings_range() { return 0; }
  static constexpr int block_range(int layer) { return 1 + layer; }
  int final_ln_range() const { return config_.n_layer + 1; }
  // The range holding the LM head's matrix: the embeddings when tied, else "lm_head" after ln_f.
  int head_range() const;
  const ParamRange& range(int r) const;
  const std::vector<ParamRange>& ranges() const { return ranges_; }
  std::vector<std::size_t> range_sizes() const;
  std::size_t max_range_numel() const;
  std::size_t total_numel() const { return total_; }

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  // InternalError if no tensor has that name.
  const ParamTensor& tensor(std::string_view name) const;

  // Offsets inside a range (identical for every block range), for the typed views below; kAbsent for
  // a tensor the architecture leaves out (a bias, wpe with rotary positions, ln_f.bias with RMSNorm).
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  std::size_t block_tensor_offset(BlockTensor t) const { return block_offsets_[static_cast<int>(t)]; }
  std::size_t wte_range_offset() const { return 0; }
  std::size_t wpe_range_offset() const { return wpe_offset_; }
  std::size_t final_bias_range_offset() const { return final_bias_offset_; }

 private:
  GptConfig config_;
  std::vector<ParamRange> ranges_;
  std::vector<ParamTensor> tensors_;
  std::vector<std::size_t> block_offsets_;
  std::size_t wpe_offset_ = kAbsent, final_bias_offset_ = kAbsent;
  std::size_t total_ = 0;
};

// Typed views into one range's memory (float or const float), given the range's first element. A
// tensor the architecture leaves out is null. QKV = (H + 2 KV) D query, key and value rows; FC = F
// (GELU) or 2F (SwiGLU's gate rows, then up rows); F the MLP width.
template <typename F>
struct EmbeddingView {
  F* wte;  // (V, C)
  F* wpe;  // (P, C); null with rotary positions
};
template <typename F>
struct BlockView {
  F* ln1_w;        // (C)
  F* ln1_b;        // (C) or null
  F* qkv_w;        // (QKV, C)
  F* qkv_b;        // (QKV) or null
  F* attn_proj_w;  // (C, H D)
  F* attn_proj_b;  // (C) or null
  F* ln2_w;        // (C)
  F* ln2_b;        // (C) or null
  F* fc_w;         // (FC, C)
  F* fc_b;         // (FC) or null
  F* mlp_proj_w;   // (C, F)
  F* mlp_proj_b;   // (C) or null
};
template <typename F>
struct FinalLnView {
  F* w;  // (C)
  F* b;  // (C) or null
};

namespace layout_detail {
template <typename F>
F* at_offset(F* range_base, std::size_t offset) {
  return offset == ParameterLayout::kAbsent ? nullptr : range_base + offset;
}
}  // namespace layout_detail

template <typename F>
EmbeddingView<F> embedding_view(const ParameterLayout& l, F* range_base) {
  return {range_base + l.wte_range_offset(), layout_detail::at_offset(range_base, l.wpe_range_offset())};
}
template <typename F>
BlockView<F> block_view(const ParameterLayout& l, F* range_base) {
  auto at = [&](BlockTensor t) { return layout_detail::at_offset(range_base, l.block_tensor_offset(t)); };
  return {at(BlockTensor::ln1_w), at(BlockTensor::ln1_b),       at(BlockTensor::qkv_w),
          at(BlockTensor::qkv_b), at(BlockTensor::attn_proj_w), at(BlockTensor::attn_proj_b),
          at(BlockTensor::ln2_w), at(BlockTensor::ln2_b),       at(BlockTensor::fc_w),
          at(BlockTensor::fc_b),  at(BlockTensor::mlp_proj_w),  at(BlockTensor::mlp_proj_b)};
}
template <typename F>
FinalLnView<F> final_ln_view(const ParameterLayout& l, F* range_base) {
  return {range_base, layout_detail::at_offset(range_base, l.final_bias_range_offset())};
}

}  // namespace tz
