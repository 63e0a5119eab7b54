#include "model/parameter_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include "core/error.hpp"

namespace tz {

ParameterLayout::ParameterLayout(const GptConfig& config) : config_(config) {
  config_.validate("(layout)");
  const std::size_t C = config.n_embd, V = config.vocab_size, P = config.n_positions;
  const std::size_t D = config.head_size(), H = config.n_head, KV = config.kv_heads(), F = config.mlp_width();
  const std::size_t qkv = (H + 2 * KV) * D;                          // query rows, then key and value rows
  const std::size_t fc = config.mlp == MlpKind::swiglu ? 2 * F : F;  // SwiGLU: gate rows, then up rows
  std::size_t offset = 0;
  auto begin_range = [&](std::string name) { ranges_.push_back({std::move(name), offset, 0}); };
  auto add = [&](std::string name, std::vector<std::size_t> shape, bool decay, bool tied = false) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    ParamRange& r = ranges_.back();
    // Weight matrices: wte and the linear weights (the 2-D tensors), not wpe (added row by row in fp32).
    const bool matrix = shape.size() == 2 && name != "wpe";
    tensors_.push_back({std::move(name), static_cast<int>(ranges_.size()) - 1, offset, offset - r.offset, n,
                        std::move(shape), decay, tied, matrix});
    offset += n;
    r.numel += n;
  };
  auto norm = [&](const std::string& prefix) {
    add(prefix + ".weight", {C}, false);
    if (config.norm_bias) add(prefix + ".bias", {C}, false);
  };
  auto linear = [&](const std::string& prefix, std::size_t out, std::size_t in, bool bias) {
    add(prefix + ".weight", {out, in}, true);
    if (bias) add(prefix + ".bias", {out}, false);
  };
  begin_range("embeddings");
  add("wte", {V, C}, true, config.tied_embeddings);
  if (config.positions == PositionKind::learned) add("wpe", {P, C}, true);
  for (int i = 0; i < config.n_layer; ++i) {
    std::string h = fmt::format("h.{}.", i);
    begin_range(fmt::format("h.{}", i));
    norm(h + "ln_1");
    linear(h + "attn.qkv", qkv, C, config.qkv_bias);
    linear(h + "attn.proj", C, H * D, config.attn_out_bias);
    norm(h + "ln_2");
    linear(h + "mlp.fc", fc, C, config.mlp_bias);
    linear(h + "mlp.proj", C, F, config.mlp_bias);
  }
  begin_range("ln_f");
  norm("ln_f");
  if (!config.tied_embeddings) {
    begin_range("lm_head");
    add("lm_head.weight", {V, C}, true);
  }
  total_ = offset;
  // The typed views' offsets, by name (kAbsent for what this architecture leaves out).
  auto offset_of = [&](std::string_view name) {
    for (const auto& t : tensors_)
      if (t.name == name) return t.range_offset;
    return kAbsent;
  };
  static constexpr const char* kBlockNames[] = {
      "ln_1.weight", "ln_1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
      "ln_2.weight", "ln_2.bias", "mlp.fc.weight",   "mlp.fc.bias",   "mlp.proj.weight",  "mlp.proj.bias"};
  static_assert(std::size(kBlockNames) == static_cast<std::size_t>(BlockTensor::count));
  for (const char* name : kBlockNames) block_offsets_.push_back(offset_of(std::string("h.0.") + name));
  wpe_offset_ = offset_of("wpe");
  final_bias_offset_ = offset_of("ln_f.bias");
}

int ParameterLayout::head_range() const {
  return config_.tied_embeddings ? embeddings_range() : final_ln_range() + 1;
}

const ParamRange& ParameterLayout::range(int r) const {
  TZ_CHECK(r >= 0 && r < num_ranges(), "range {} of {}", r, num_ranges());
  return ranges_[r];
}

std::vector<std::size_t> ParameterLayout::range_sizes() const {
  std::vector<std::size_t> sizes;
  for (const auto& r : ranges_) sizes.push_back(r.numel);
  return sizes;
}

std::size_t ParameterLayout::max_range_numel() const {
  std::size_t m = 0;
  for (const auto& r : ranges_) m = std::max(m, r.numel);
  return m;
}

const ParamTensor& ParameterLayout::tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  TZ_CHECK(false, "no parameter tensor named '{}'", name);
  __builtin_unreachable();
}

}  // namespace tz
