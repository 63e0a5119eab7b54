#include "checkpoint/gpt2_file_layout.hpp"

#include <fmt/format.h>

#include <functional>
#include <string_view>
#include <unordered_map>

#include "core/error.hpp"

namespace tz {
namespace {

// Tensor indices by name, built once per table (a lookup per file tensor keeps the table linear in
// the layer count).
class TensorIndex {
 public:
  explicit TensorIndex(const ParameterLayout& params) {
    const auto& ts = params.tensors();
    by_name_.reserve(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) by_name_.emplace(ts[i].name, static_cast<int>(i));
  }
  int operator()(const std::string& name) const {
    const auto it = by_name_.find(name);
    TZ_CHECK(it != by_name_.end(), "no parameter tensor named '{}'", name);
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, int> by_name_;  // views of the layout's names
};

std::vector<std::uint64_t> shape_of(const ParamTensor& t, bool transposed) {
  std::vector<std::uint64_t> s(t.shape.begin(), t.shape.end());
  if (transposed) std::swap(s[0], s[1]);
  return s;
}

}  // namespace

std::uint64_t FileTensor::numel() const {
  std::uint64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

void for_each_hf_gpt2_name(int n_layer, const std::function<bool(const HfGpt2Name&)>& visit) {
  struct BlockName {
    const char *hf, *tz;
    bool transposed;
  };
  static constexpr BlockName kBlock[] = {{"ln_1.weight", "ln_1.weight", false},
                                         {"ln_1.bias", "ln_1.bias", false},
                                         {"attn.c_attn.weight", "attn.qkv.weight", true},
                                         {"attn.c_attn.bias", "attn.qkv.bias", false},
                                         {"attn.c_proj.weight", "attn.proj.weight", true},
                                         {"attn.c_proj.bias", "attn.proj.bias", false},
                                         {"ln_2.weight", "ln_2.weight", false},
                                         {"ln_2.bias", "ln_2.bias", false},
                                         {"mlp.c_fc.weight", "mlp.fc.weight", true},
                                         {"mlp.c_fc.bias", "mlp.fc.bias", false},
                                         {"mlp.c_proj.weight", "mlp.proj.weight", true},
                                         {"mlp.c_proj.bias", "mlp.proj.bias", false}};
  if (!visit({"wte.weight", "wte", false}) || !visit({"wpe.weight", "wpe", false})) return;
  for (int i = 0; i < n_layer; ++i) {
    const std::string h = fmt::format("h.{}.", i);
    for (const BlockName& b : kBlock)
      if (!visit({h + b.hf, h + b.tz, b.transposed})) return;
  }
  if (visit({"ln_f.weight", "ln_f.weight", false})) visit({"ln_f.bias", "ln_f.bias", false});
}

std::vector<FileTensor> hf_gpt2_tensors(const ParameterLayout& params) {
  const TensorIndex index_of(params);
  std::vector<FileTensor> out;
  for_each_hf_gpt2_name(params.config().n_layer, [&](const HfGpt2Name& n) {
    const int t = index_of(n.tierzero);
    out.push_back({n.file, shape_of(params.tensors()[t], n.transposed), {{t, n.transposed, 0}}});
    return true;
  });
  return out;
}

int llmc_padded_vocab(int vocab_size) {
  return (vocab_size + 127) / 128 * 128;
}

std::vector<FileTensor> llmc_tensors(const ParameterLayout& params) {
  const GptConfig& c = params.config();
  const std::uint64_t L = c.n_layer, C = c.n_embd;
  const TensorIndex index_of(params);
  std::vector<FileTensor> out;
  auto single = [&](const std::string& name, const std::string& tz_name, std::vector<std::uint64_t> shape) {
    out.push_back({name, std::move(shape), {{index_of(tz_name), false, 0}}});
  };
  single("wte", "wte", {static_cast<std::uint64_t>(llmc_padded_vocab(c.vocab_size)), C});
  single("wpe", "wpe", {static_cast<std::uint64_t>(c.n_positions), C});
  const std::pair<const char*, const char*> stacked[] = {
      {"ln1w", "ln_1.weight"},          {"ln1b", "ln_1.bias"},
      {"qkvw", "attn.qkv.weight"},      {"qkvb", "attn.qkv.bias"},
      {"attprojw", "attn.proj.weight"}, {"attprojb", "attn.proj.bias"},
      {"ln2w", "ln_2.weight"},          {"ln2b", "ln_2.bias"},
      {"fcw", "mlp.fc.weight"},         {"fcb", "mlp.fc.bias"},
      {"fcprojw", "mlp.proj.weight"},   {"fcprojb", "mlp.proj.bias"}};
  for (const auto& [name, suffix] : stacked) {
    FileTensor ft{name, {L}, {}};
    std::uint64_t at = 0;
    for (int i = 0; i < c.n_layer; ++i) {
      const int t = index_of(fmt::format("h.{}.{}", i, suffix));
      if (i == 0)
        for (auto s : params.tensors()[t].shape) ft.shape.push_back(s);
      ft.parts.push_back({t, false, at});
      at += params.tensors()[t].numel;
    }
    out.push_back(std::move(ft));
  }
  single("lnfw", "ln_f.weight", {C});
  single("lnfb", "ln_f.bias", {C});
  return out;
}

}  // namespace tz
