#include "checkpoint/model_file_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "checkpoint/hf_tensor_names.hpp"
#include "checkpoint/llmc_format.hpp"
#include "checkpoint/model_file_layout.hpp"
#include "checkpoint/safetensors_format.hpp"
#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "core/finite_scan.hpp"

namespace tz {
namespace {

using TensorSource = ModelFileReader::TensorSource;

// "transformer." when a GPT-2 file's names carry GPT2LMHeadModel's prefix, else "" (the other
// families' names are the causal-LM class's own, prefix included).
std::string hf_prefix(const SafetensorsHeader& h, ModelFamily family) {
  if (family != ModelFamily::gpt2) return "";
  const bool prefixed = std::any_of(h.entries.begin(), h.entries.end(),
                                    [](const auto& e) { return e.name.rfind("transformer.", 0) == 0; });
  return prefixed ? "transformer." : "";
}

TensorSource whole_tensor_source(const ParamTensor& pt) {
  TensorSource s;
  s.rows = pt.shape[0];
  s.cols = pt.shape.size() > 1 ? pt.shape[1] : 1;
  return s;
}

std::vector<TensorSource> llmc_sources(const InFile& f, const ParameterLayout& params,
                                       std::string& dtype_out) {
  if (!params.config().is_gpt2_architecture())
    fail_input("llm.c checkpoint {}: llm.c's layout holds a GPT-2; this run's model is {}", f.path(),
               model_family_name(params.config().family));
  const LlmcHeader h = read_llmc_header(f, &params.config());
  const std::size_t esize = dtype_bytes(h.dtype);
  std::vector<FileTensor> tensors = llmc_tensors(params);
  tensors[0].shape[0] = static_cast<std::uint64_t>(h.padded_vocab);  // the file's Vp, not ours
  std::uint64_t expected = kLlmcModelHeaderBytes;
  std::vector<TensorSource> out(params.tensors().size());
  for (const auto& ft : tensors) {
    for (const auto& p : ft.parts) {
      const ParamTensor& pt = params.tensors()[p.tensor];
      out[p.tensor] = whole_tensor_source(pt);
      out[p.tensor].segments.push_back({0, pt.numel, expected + p.offset * esize, h.dtype, ft.name});
    }
    expected += ft.numel() * esize;
  }
  TZ_CHECK_EQ(f.size(), expected);  // read_llmc_header checked the size the words announce
  dtype_out = h.dtype == DType::bf16 ? "bf16" : "fp32";
  return out;
}

std::vector<TensorSource> safetensors_sources(const InFile& f, const ParameterLayout& params,
                                              std::string& dtype_out) {
  const SafetensorsHeader h = read_safetensors_header(f);
  const ModelFamily family = params.config().family;
  const std::string_view arch = hf_architecture_name(family);
  const std::string prefix = hf_prefix(h, family);
  std::set<std::string> used;
  std::vector<TensorSource> out(params.tensors().size());
  for (std::size_t t = 0; t < out.size(); ++t) out[t] = whole_tensor_source(params.tensors()[t]);
  std::set<DType> dtypes;
  for (const auto& ft : hf_tensors(params, "safetensors " + f.path())) {
    const SafetensorsEntry* e = h.find(prefix + ft.name);
    if (!e)
      fail_input("safetensors {}: tensor '{}' is missing (this run's model is a {}: {}'s names)", f.path(),
                 prefix + ft.name, model_family_name(family), arch);
    if (e->shape != ft.shape)
      fail_input("safetensors {}: tensor '{}': expected shape [{}], found [{}]", f.path(), e->name,
                 fmt::join(ft.shape, ", "), fmt::join(e->shape, ", "));
    used.insert(e->name);
    dtypes.insert(e->dtype);
    const std::uint64_t esize = dtype_bytes(e->dtype);
    for (const auto& p : ft.parts) {
      out[p.tensor].transposed = p.transposed;
      out[p.tensor].segments.push_back(
          {p.begin, p.numel, h.data_offset + e->begin + p.offset * esize, e->dtype, e->name});
    }
  }
  for (auto& s : out)
    std::sort(s.segments.begin(), s.segments.end(),
              [](const auto& a, const auto& b) { return a.begin < b.begin; });
  const std::string head = std::string(hf_head_name(family));
  for (const auto& e : h.entries) {
    if (used.count(e.name)) continue;
    const std::string bare = e.name.substr(e.name.rfind(prefix, 0) == 0 ? prefix.size() : 0);
    if (is_hf_buffer_name(family, bare) || is_hf_buffer_name(family, e.name)) continue;
    if (params.config().tied_embeddings && (bare == head || e.name == head)) {
      const SafetensorsEntry* emb = h.find(prefix + std::string(hf_embedding_name(family)));
      if (e.shape != emb->shape || e.dtype != emb->dtype)
        fail_input("safetensors {}: tensor '{}': expected shape [{}] ({}, tied to {}), found [{}]", f.path(),
                   e.name, fmt::join(emb->shape, ", "), dtype_name(emb->dtype), emb->name,
                   fmt::join(e.shape, ", "));
      out[0].head_offset = h.data_offset + e.begin;
      out[0].head_name = e.name;
      continue;
    }
    fail_input("safetensors {}: tensor '{}' is not a {} tensor of this model", f.path(), e.name,
               hf_family_label(family));
  }
  dtype_out = dtypes.size() == 1 && *dtypes.begin() == DType::bf16 ? "bf16"
              : dtypes.size() == 1                                 ? "fp32"
                                                                   : "mixed";
  return out;
}

}  // namespace

void check_safetensors_holds_model(const std::string& path, const GptConfig& model) {
  const InFile file(path);
  const SafetensorsHeader h = read_safetensors_header(file);
  const std::uint64_t needed = hf_tensor_count(model);
  if (h.entries.size() >= needed) return;
  // Fewer entries than the model has tensors, so one is missing: found after at most as many lookups
  // as the file has entries, whatever the model's layer count.
  const std::string prefix = hf_prefix(h, model.family);
  std::string missing;
  for_each_hf_tensor_name(model, [&](const HfTensorName& n) {
    if (h.find(prefix + n.file)) return true;
    missing = prefix + n.file;
    return false;
  });
  fail_input("safetensors {}: tensor '{}' is missing (the file holds {} tensors; a {} of {} layers has {})",
             path, missing, h.entries.size(), hf_family_label(model.family), model.n_layer, needed);
}

ModelFileReader::ModelFileReader(const std::string& path, const ParameterLayout& params)
    : params_(params), file_(path) {
  if (is_llmc_checkpoint(file_)) {
    format_ = "llmc";
    sources_ = llmc_sources(file_, params, dtype_);
  } else {
    format_ = "safetensors";
    sources_ = safetensors_sources(file_, params, dtype_);
  }
}

std::vector<float> ModelFileReader::read_all() {
  std::vector<float> out(params_.total_numel());
  const auto& tensors = params_.tensors();
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t)
    read(t, 0, tensors[t].numel, out.data() + tensors[t].offset);
  return out;
}

void ModelFileReader::check_finite(int t, std::uint64_t begin, std::uint64_t n, const float* values) const {
  const std::size_t bad = first_nonfinite(values, n);
  if (bad == n) return;
  const TensorSource& s = sources_[t];
  const std::uint64_t element = begin + bad;
  const auto seg = std::find_if(s.segments.begin(), s.segments.end(),
                                [&](const auto& g) { return element < g.begin + g.numel; });
  fail_input(
      "{} {}: tensor '{}' (tierzero's {}) element {} (in tierzero's (out, in) order) is {}: a model file's "
      "weights must be finite",
      format_ == "llmc" ? "llm.c checkpoint" : "safetensors", file_.path(),
      seg == s.segments.end() ? std::string("?") : seg->file_name, params_.tensors()[t].name, element,
      values[bad]);
}

void ModelFileReader::read(int t, std::uint64_t begin, std::uint64_t n, float* out) {
  read_unchecked(t, begin, n, out);
  check_finite(t, begin, n, out);
}

void ModelFileReader::read_unchecked(int t, std::uint64_t begin, std::uint64_t n, float* out) {
  const TensorSource& s = sources_[t];
  if (n == 0) return;
  if (!s.transposed) {
    // The segments the span overlaps, each one positioned read.
    const std::uint64_t end = begin + n;
    auto seg = std::upper_bound(s.segments.begin(), s.segments.end(), begin,
                                [](std::uint64_t b, const auto& g) { return b < g.begin; });
    TZ_CHECK(seg != s.segments.begin(), "tensor {} span at {}", params_.tensors()[t].name, begin);
    for (--seg; seg != s.segments.end() && seg->begin < end; ++seg) {
      const std::uint64_t a = std::max(begin, seg->begin), b = std::min(end, seg->begin + seg->numel);
      if (a < b) read_values(seg->byte_offset, seg->dtype, a - seg->begin, b - a, out + (a - begin));
    }
    if (s.head_offset != 0) {  // a tied LM head in the file: the same elements as the embedding
      const DType dtype = s.segments.front().dtype;
      check_.resize(n);
      read_values(s.head_offset, dtype, begin, n, check_.data());
      for (std::uint64_t i = 0; i < n; ++i)
        if (std::memcmp(&check_[i], &out[i], 4) != 0)
          fail_input(
              "safetensors {}: tensor '{}' differs from '{}' at element {} ({} vs {}): this model's LM head "
              "is "
              "tied to its embedding",
              file_.path(), s.head_name, s.segments.front().file_name, begin + i, check_[i], out[i]);
    }
    return;
  }
  // The file holds the matrix as (in, out): tierzero's rows [o0, o1) that the span touches are
  // columns there, so one positioned read per file row fetches exactly them (the span plus at most
  // two partial rows; never the whole tensor unless the span is).
  const Segment& g = s.segments.front();
  const std::uint64_t o0 = begin / s.cols, o1 = (begin + n - 1) / s.cols + 1, w = o1 - o0;
  tile_.resize(s.cols * w);
  for (std::uint64_t i = 0; i < s.cols; ++i)
    read_values(g.byte_offset, g.dtype, i * s.rows + o0, w, tile_.data() + i * w);
  for (std::uint64_t k = begin; k < begin + n; ++k) {
    const std::uint64_t o = k / s.cols, i = k % s.cols;
    out[k - begin] = tile_[i * w + (o - o0)];
  }
}

void ModelFileReader::read_values(std::uint64_t byte_offset, DType dtype, std::uint64_t begin,
                                  std::uint64_t n, float* out) {
  const std::size_t esize = dtype_bytes(dtype);
  if (dtype == DType::f32) {
    file_.read_at(byte_offset + begin * esize, out, n * esize);
  } else {
    constexpr std::uint64_t kChunk = 1 << 18;
    bf16_buf_.resize(std::min(n, kChunk));
    for (std::uint64_t at = 0; at < n; at += kChunk) {
      const std::uint64_t m = std::min(kChunk, n - at);
      file_.read_at(byte_offset + (begin + at) * esize, bf16_buf_.data(), m * esize);
      floats_from_bf16(out + at, bf16_buf_.data(), m);
    }
  }
  bytes_read_ += n * esize;
}

}  // namespace tz
