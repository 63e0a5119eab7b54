#include "checkpoint/gpt2_file_layout.hpp"

#include <fmt/format.h>

namespace tz {
namespace {

int index_of(const ParameterLayout& params, const std::string& name) {
  const auto& ts = params.tensors();
  for (std::size_t i = 0; i < ts.size(); ++i)
    if (ts[i].name == name) return static_cast<int>(i);
  return -1;
}

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

std::vector<FileTensor> hf_gpt2_tensors(const ParameterLayout& params) {
  std::vector<FileTensor> out;
  auto add = [&](const std::string& file_name, const std::string& tz_name, bool transposed) {
    const int t = index_of(params, tz_name);
    out.push_back({file_name, shape_of(params.tensors()[t], transposed), {{t, transposed, 0}}});
  };
  add("wte.weight", "wte", false);
  add("wpe.weight", "wpe", false);
  for (int i = 0; i < params.config().n_layer; ++i) {
    const std::string h = fmt::format("h.{}.", i);
    add(h + "ln_1.weight", h + "ln_1.weight", false);
    add(h + "ln_1.bias", h + "ln_1.bias", false);
    add(h + "attn.c_attn.weight", h + "attn.qkv.weight", true);
    add(h + "attn.c_attn.bias", h + "attn.qkv.bias", false);
    add(h + "attn.c_proj.weight", h + "attn.proj.weight", true);
    add(h + "attn.c_proj.bias", h + "attn.proj.bias", false);
    add(h + "ln_2.weight", h + "ln_2.weight", false);
    add(h + "ln_2.bias", h + "ln_2.bias", false);
    add(h + "mlp.c_fc.weight", h + "mlp.fc.weight", true);
    add(h + "mlp.c_fc.bias", h + "mlp.fc.bias", false);
    add(h + "mlp.c_proj.weight", h + "mlp.proj.weight", true);
    add(h + "mlp.c_proj.bias", h + "mlp.proj.bias", false);
  }
  add("ln_f.weight", "ln_f.weight", false);
  add("ln_f.bias", "ln_f.bias", false);
  return out;
}

int llmc_padded_vocab(int vocab_size) {
  return (vocab_size + 127) / 128 * 128;
}

std::vector<FileTensor> llmc_tensors(const ParameterLayout& params) {
  const GptConfig& c = params.config();
  const std::uint64_t L = c.n_layer, C = c.n_embd;
  std::vector<FileTensor> out;
  auto single = [&](const std::string& name, const std::string& tz_name, std::vector<std::uint64_t> shape) {
    out.push_back({name, std::move(shape), {{index_of(params, tz_name), false, 0}}});
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
      const int t = index_of(params, fmt::format("h.{}.{}", i, suffix));
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
