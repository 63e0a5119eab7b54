#include "checkpoint/model_file_layout.hpp"

#include <fmt/format.h>

#include <functional>
#include <string_view>
#include <unordered_map>

#include "checkpoint/hf_tensor_names.hpp"
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
    const int t = find(name);
    TZ_CHECK(t >= 0, "no parameter tensor named '{}'", name);
    return t;
  }
  int find(const std::string& name) const {  // -1: none
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
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

std::vector<FileTensor> hf_tensors(const ParameterLayout& params, const std::string& where) {
  const GptConfig& c = params.config();
  const std::uint64_t C = c.n_embd, H = c.n_head, KV = c.kv_heads(), D = c.head_size(), F = c.mlp_width();
  const std::string_view arch = hf_architecture_name(c.family);
  const TensorIndex index_of(params);
  std::vector<std::uint64_t> placed(params.tensors().size(), 0);  // elements of each tensor in the file
  std::vector<FileTensor> out;
  for_each_hf_tensor_name(c, [&](const HfTensorName& n) {
    const int t = index_of.find(n.tierzero);
    if (t < 0)
      fail_input("{}: {}'s tensor '{}' comes from tierzero's '{}', which this {} model does not have", where,
                 arch, n.file, n.tierzero, model_family_name(c.family));
    const ParamTensor& pt = params.tensors()[t];
    const std::uint64_t rows = pt.shape[0], cols = pt.shape.size() > 1 ? pt.shape[1] : 1;
    FileTensor ft{n.file, {}, {}};
    auto row_run = [&](std::uint64_t first, std::uint64_t count) {
      if (first + count > rows)
        fail_input("{}: {}'s tensor '{}' is rows [{}, {}) of tierzero's '{}', which has {} rows", where, arch,
                   n.file, first, first + count, n.tierzero, rows);
      ft.shape =
          pt.shape.size() > 1 ? std::vector<std::uint64_t>{count, cols} : std::vector<std::uint64_t>{count};
      ft.parts.push_back({t, false, 0, first * cols, count * cols});
    };
    switch (n.map) {
      case RowMap::same:
        row_run(0, rows);
        break;
      case RowMap::transposed:
        ft.shape = shape_of(pt, true);
        ft.parts.push_back({t, true, 0, 0, pt.numel});
        break;
      case RowMap::query_rows:
        row_run(0, H * D);
        break;
      case RowMap::key_rows:
        row_run(H * D, KV * D);
        break;
      case RowMap::value_rows:
        row_run((H + KV) * D, KV * D);
        break;
      case RowMap::gate_rows:
        row_run(0, F);
        break;
      case RowMap::up_rows:
        row_run(F, F);
        break;
      case RowMap::heads_interleaved:
        if (KV != H)
          fail_input(
              "{}: {}'s '{}' groups a key and a value head with each query head; this model has {} "
              "key/value heads for {} heads",
              where, arch, n.file, KV, H);
        // File row (h 3 + j) D + d is tierzero row j C + h D + d: per head, its query, key and value rows.
        ft.shape = shape_of(pt, false);
        for (std::uint64_t h = 0; h < H; ++h)
          for (std::uint64_t j = 0; j < 3; ++j)
            ft.parts.push_back({t, false, (h * 3 + j) * D * cols, (j * C + h * D) * cols, D * cols});
        break;
    }
    for (const auto& p : ft.parts) placed[t] += p.numel;
    out.push_back(std::move(ft));
    return true;
  });
  for (std::size_t t = 0; t < placed.size(); ++t)
    if (placed[t] != params.tensors()[t].numel)
      fail_input(
          "{}: tierzero's tensor '{}' has no place in {}'s file ({} of its {} elements placed): this {} "
          "model's architecture is not one {} holds",
          where, params.tensors()[t].name, arch, placed[t], params.tensors()[t].numel,
          model_family_name(c.family), arch);
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
    const int t = index_of(tz_name);
    out.push_back({name, std::move(shape), {{t, false, 0, 0, params.tensors()[t].numel}}});
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
      ft.parts.push_back({t, false, at, 0, params.tensors()[t].numel});
      at += params.tensors()[t].numel;
    }
    out.push_back(std::move(ft));
  }
  single("lnfw", "ln_f.weight", {C});
  single("lnfb", "ln_f.bias", {C});
  return out;
}

}  // namespace tz
