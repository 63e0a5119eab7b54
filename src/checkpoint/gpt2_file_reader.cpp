#include "checkpoint/gpt2_file_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "checkpoint/gpt2_file_layout.hpp"
#include "checkpoint/llmc_format.hpp"
#include "checkpoint/safetensors_format.hpp"
#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "core/finite_scan.hpp"

namespace tz {
namespace {

using TensorSource = Gpt2FileReader::TensorSource;

bool is_ignored_hf_name(const std::string& name) {
  if (name == "lm_head.weight") return true;
  if (name.rfind("h.", 0) != 0) return false;
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

// "transformer." when the file's names carry GPT2LMHeadModel's prefix, else "".
std::string hf_prefix(const SafetensorsHeader& h) {
  const bool prefixed = std::any_of(h.entries.begin(), h.entries.end(),
                                    [](const auto& e) { return e.name.rfind("transformer.", 0) == 0; });
  return prefixed ? "transformer." : "";
}

std::vector<TensorSource> llmc_sources(const InFile& f, const ParameterLayout& params,
                                       std::string& dtype_out) {
  const LlmcHeader h = read_llmc_header(f, &params.config());
  const std::size_t esize = dtype_bytes(h.dtype);
  std::vector<FileTensor> tensors = llmc_tensors(params);
  tensors[0].shape[0] = static_cast<std::uint64_t>(h.padded_vocab);  // the file's Vp, not ours
  std::uint64_t expected = kLlmcModelHeaderBytes;
  std::vector<TensorSource> out(params.tensors().size());
  for (const auto& ft : tensors) {
    for (const auto& p : ft.parts) {
      const ParamTensor& pt = params.tensors()[p.tensor];
      out[p.tensor] = {expected + p.offset * esize,           h.dtype, false,  pt.shape[0],
                       pt.shape.size() > 1 ? pt.shape[1] : 1, 0,       ft.name};
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
  const std::string prefix = hf_prefix(h);
  std::set<std::string> used;
  std::vector<TensorSource> out(params.tensors().size());
  std::set<DType> dtypes;
  for (const auto& ft : hf_gpt2_tensors(params)) {
    const SafetensorsEntry* e = h.find(prefix + ft.name);
    if (!e) fail_input("safetensors {}: tensor '{}' is missing", f.path(), prefix + ft.name);
    if (e->shape != ft.shape)
      fail_input("safetensors {}: tensor '{}': expected shape [{}], found [{}]", f.path(), e->name,
                 fmt::join(ft.shape, ", "), fmt::join(e->shape, ", "));
    used.insert(e->name);
    dtypes.insert(e->dtype);
    const ParamTensor& pt = params.tensors()[ft.parts[0].tensor];
    out[ft.parts[0].tensor] = {h.data_offset + e->begin,
                               e->dtype,
                               ft.parts[0].transposed,
                               pt.shape[0],
                               pt.shape.size() > 1 ? pt.shape[1] : 1,
                               0,
                               e->name};
  }
  for (const auto& e : h.entries) {
    if (used.count(e.name)) continue;
    const std::string bare = e.name.substr(e.name.rfind(prefix, 0) == 0 ? prefix.size() : 0);
    if (!is_ignored_hf_name(bare) && !is_ignored_hf_name(e.name))
      fail_input("safetensors {}: tensor '{}' is not a GPT-2 tensor of this model", f.path(), e.name);
    if (bare == "lm_head.weight" || e.name == "lm_head.weight") {
      const SafetensorsEntry* wte = h.find(prefix + "wte.weight");
      if (e.shape != wte->shape || e.dtype != wte->dtype)
        fail_input("safetensors {}: tensor '{}': expected shape [{}] ({}, tied to wte.weight), found [{}]",
                   f.path(), e.name, fmt::join(wte->shape, ", "), dtype_name(wte->dtype),
                   fmt::join(e.shape, ", "));
      out[0].lm_head_offset = h.data_offset + e.begin;
    }
  }
  dtype_out = dtypes.size() == 1 && *dtypes.begin() == DType::bf16 ? "bf16"
              : dtypes.size() == 1                                 ? "fp32"
                                                                   : "mixed";
  return out;
}

}  // namespace

void check_safetensors_holds_gpt2(const std::string& path, const GptConfig& model) {
  const InFile file(path);
  const SafetensorsHeader h = read_safetensors_header(file);
  const std::uint64_t needed = 12 * static_cast<std::uint64_t>(model.n_layer) + 4;
  if (h.entries.size() >= needed) return;
  // Fewer entries than the model has tensors, so one is missing: found after at most as many lookups
  // as the file has entries, whatever the model's layer count.
  const std::string prefix = hf_prefix(h);
  std::string missing;
  for_each_hf_gpt2_name(model.n_layer, [&](const HfGpt2Name& n) {
    if (h.find(prefix + n.file)) return true;
    missing = prefix + n.file;
    return false;
  });
  fail_input(
      "safetensors {}: tensor '{}' is missing (the file holds {} tensors; a GPT-2 of {} layers has {})", path,
      missing, h.entries.size(), model.n_layer, needed);
}

Gpt2FileReader::Gpt2FileReader(const std::string& path, const ParameterLayout& params)
    : params_(params), file_(path) {
  if (is_llmc_checkpoint(file_)) {
    format_ = "llmc";
    sources_ = llmc_sources(file_, params, dtype_);
  } else {
    format_ = "safetensors";
    sources_ = safetensors_sources(file_, params, dtype_);
  }
}

std::vector<float> Gpt2FileReader::read_all() {
  std::vector<float> out(params_.total_numel());
  const auto& tensors = params_.tensors();
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t)
    read(t, 0, tensors[t].numel, out.data() + tensors[t].offset);
  return out;
}

void Gpt2FileReader::check_finite(int t, std::uint64_t begin, std::uint64_t n, const float* values) const {
  const std::size_t bad = first_nonfinite(values, n);
  if (bad == n) return;
  const TensorSource& s = sources_[t];
  fail_input(
      "{} {}: tensor '{}' (tierzero's {}) element {} (in tierzero's (out, in) order) is {}: a model file's "
      "weights "
      "must be finite",
      format_ == "llmc" ? "llm.c checkpoint" : "safetensors", file_.path(), s.file_name,
      params_.tensors()[t].name, begin + bad, values[bad]);
}

void Gpt2FileReader::read(int t, std::uint64_t begin, std::uint64_t n, float* out) {
  read_unchecked(t, begin, n, out);
  check_finite(t, begin, n, out);
}

void Gpt2FileReader::read_unchecked(int t, std::uint64_t begin, std::uint64_t n, float* out) {
  const TensorSource& s = sources_[t];
  if (!s.transposed) {
    read_values(s.byte_offset, s.dtype, begin, n, out);
    if (s.lm_head_offset != 0) {
      check_.resize(n);
      read_values(s.lm_head_offset, s.dtype, begin, n, check_.data());
      for (std::uint64_t i = 0; i < n; ++i)
        if (std::memcmp(&check_[i], &out[i], 4) != 0)
          fail_input(
              "safetensors {}: tensor 'lm_head.weight' differs from 'wte.weight' at element {} ({} vs {}): "
              "tierzero's LM head is tied to wte",
              file_.path(), begin + i, check_[i], out[i]);
    }
    return;
  }
  // The file holds the matrix as (in, out): tierzero's rows [o0, o1) that the span touches are
  // columns there, so one positioned read per file row fetches exactly them (the span plus at most
  // two partial rows; never the whole tensor unless the span is).
  if (n == 0) return;
  const std::uint64_t o0 = begin / s.cols, o1 = (begin + n - 1) / s.cols + 1, w = o1 - o0;
  tile_.resize(s.cols * w);
  for (std::uint64_t i = 0; i < s.cols; ++i)
    read_values(s.byte_offset, s.dtype, i * s.rows + o0, w, tile_.data() + i * w);
  for (std::uint64_t k = begin; k < begin + n; ++k) {
    const std::uint64_t o = k / s.cols, i = k % s.cols;
    out[k - begin] = tile_[i * w + (o - o0)];
  }
}

void Gpt2FileReader::read_values(std::uint64_t tensor_offset, DType dtype, std::uint64_t begin,
                                 std::uint64_t n, float* out) {
  const std::size_t esize = dtype_bytes(dtype);
  if (dtype == DType::f32) {
    file_.read_at(tensor_offset + begin * esize, out, n * esize);
  } else {
    constexpr std::uint64_t kChunk = 1 << 18;
    bf16_buf_.resize(std::min(n, kChunk));
    for (std::uint64_t at = 0; at < n; at += kChunk) {
      const std::uint64_t m = std::min(kChunk, n - at);
      file_.read_at(tensor_offset + (begin + at) * esize, bf16_buf_.data(), m * esize);
      floats_from_bf16(out + at, bf16_buf_.data(), m);
    }
  }
  bytes_read_ += n * esize;
}

}  // namespace tz
