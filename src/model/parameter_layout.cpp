#include "model/parameter_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace tz {

ParameterLayout::ParameterLayout(const GptConfig& config) : config_(config) {
  config_.validate("(layout)");
  const std::size_t C = config.n_embd, V = config.vocab_size, P = config.n_positions;
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
  begin_range("embeddings");
  add("wte", {V, C}, true, true);
  add("wpe", {P, C}, true);
  for (int i = 0; i < config.n_layer; ++i) {
    std::string h = fmt::format("h.{}.", i);
    begin_range(fmt::format("h.{}", i));
    add(h + "ln_1.weight", {C}, false);
    add(h + "ln_1.bias", {C}, false);
    add(h + "attn.qkv.weight", {3 * C, C}, true);
    add(h + "attn.qkv.bias", {3 * C}, false);
    add(h + "attn.proj.weight", {C, C}, true);
    add(h + "attn.proj.bias", {C}, false);
    add(h + "ln_2.weight", {C}, false);
    add(h + "ln_2.bias", {C}, false);
    add(h + "mlp.fc.weight", {4 * C, C}, true);
    add(h + "mlp.fc.bias", {4 * C}, false);
    add(h + "mlp.proj.weight", {C, 4 * C}, true);
    add(h + "mlp.proj.bias", {C}, false);
  }
  begin_range("ln_f");
  add("ln_f.weight", {C}, false);
  add("ln_f.bias", {C}, false);
  total_ = offset;
  for (int t = 0; t < static_cast<int>(BlockTensor::count); ++t)
    block_offsets_.push_back(tensors_[2 + t].range_offset);
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

std::size_t ParameterLayout::wpe_range_offset() const {
  return tensors_[1].range_offset;
}

}  // namespace tz
