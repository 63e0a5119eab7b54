#include "checkpoint/weight_export.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/llmc_format.hpp"
#include "checkpoint/model_file_layout.hpp"
#include "checkpoint/safetensors_format.hpp"
#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"

namespace tz {

WeightFormat parse_weight_format(const std::string& name, const std::string& option) {
  if (name == "safetensors") return WeightFormat::safetensors;
  if (name == "llmc") return WeightFormat::llmc;
  fail_input("{} '{}': expected safetensors or llmc", option, name);
}

DType parse_export_dtype(const std::string& name, const std::string& option) {
  if (name == "fp32" || name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  fail_input("{} '{}': expected fp32 or bf16", option, name);
}

ExportResult export_checkpoint(const std::string& checkpoint, const std::string& out,
                               const ExportOptions& options) {
  const ResolvedCheckpoint rc = resolve_checkpoint(checkpoint);
  CheckpointReader reader(rc.path);
  const CheckpointManifest& m = reader.manifest();
  const ParameterLayout params(m.model);
  m.check_against(params, "checkpoint " + rc.path);
  if (options.format == WeightFormat::llmc && !m.model.is_gpt2_architecture())
    fail_input(
        "export {} --format llmc: llm.c's layout holds GPT-2 models; this checkpoint's model is {} "
        "(export it as safetensors)",
        rc.path, model_family_name(m.model.family));
  const DType dtype = options.dtype;
  const std::size_t esize = dtype_bytes(dtype);
  const std::vector<FileTensor> tensors = options.format == WeightFormat::safetensors
                                              ? hf_tensors(params, "export of " + rc.path)
                                              : llmc_tensors(params);

  std::string header;
  std::uint64_t expected = 0;
  if (options.format == WeightFormat::safetensors) {
    std::vector<SafetensorsEntry> entries;
    std::uint64_t at = 0;
    for (const auto& t : tensors) {
      entries.push_back({t.name, dtype, t.shape, at, at + t.numel() * esize});
      at += t.numel() * esize;
    }
    header = safetensors_header_bytes(entries, {{"format", "pt"}});
    expected = header.size() + at;
  } else {
    const auto words = llmc_header_words({dtype, m.model, llmc_padded_vocab(m.model.vocab_size)});
    header.assign(reinterpret_cast<const char*>(words.data()), kLlmcModelHeaderBytes);
    expected = header.size();
    for (const auto& t : tensors) expected += t.numel() * esize;
  }

  OutputFile file(out, "export --out");  // whole or not at all; a device or FIFO is written in place
  file.write(header.data(), header.size());
  std::vector<float> values, transposed;
  int cached = -1;  // the tensor `values` holds: Llama's q/k/v_proj and GPT-NeoX's heads read it once
  std::vector<std::byte> bytes;
  auto emit = [&](const float* x, std::size_t n) {
    bytes.resize(n * esize);
    if (dtype == DType::f32) {
      std::memcpy(bytes.data(), x, n * 4);
    } else {
      bf16_from_floats(reinterpret_cast<bf16*>(bytes.data()), x, n);
    }
    file.write(bytes.data(), bytes.size());
  };
  for (const auto& ft : tensors) {
    std::uint64_t written = 0;
    for (const auto& part : ft.parts) {
      const ParamTensor& pt = params.tensors()[part.tensor];
      TZ_CHECK_EQ(part.offset, written);
      if (cached != part.tensor) {
        values.resize(pt.numel);
        reader.read(m.tensor(pt.name), OptimValue::master, 0, pt.numel, values.data());
        cached = part.tensor;
      }
      const float* src = values.data() + part.begin;
      if (part.transposed) {  // (out, in) -> (in, out)
        const std::size_t rows = pt.shape[0], cols = pt.shape[1];
        transposed.resize(pt.numel);
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t c = 0; c < cols; ++c) transposed[c * rows + r] = values[r * cols + c];
        src = transposed.data();
      }
      emit(src, part.numel);
      written += part.numel;
    }
    if (written < ft.numel()) {  // llm.c's padded vocabulary rows
      values.assign(ft.numel() - written, 0.0f);
      cached = -1;
      emit(values.data(), values.size());
      written = ft.numel();
    }
    TZ_CHECK_EQ(written, ft.numel());
  }
  if (file.bytes_written() != expected)
    fail_input("export {}: wrote {} bytes, expected {}", out, file.bytes_written(), expected);
  file.close();
  return {rc.path, m.step, static_cast<int>(tensors.size()), expected};
}

ModelWeights read_checkpoint_weights_flat(const std::string& checkpoint) {
  const ResolvedCheckpoint rc = resolve_checkpoint(checkpoint);
  CheckpointReader reader(rc.path);
  const CheckpointManifest& m = reader.manifest();
  const ParameterLayout params(m.model);
  m.check_against(params, "checkpoint " + rc.path);
  ModelWeights out;
  out.config = m.model;
  out.params.resize(params.total_numel());
  for (const ParamTensor& pt : params.tensors())
    reader.read(m.tensor(pt.name), OptimValue::master, 0, pt.numel, out.params.data() + pt.offset);
  out.origin = fmt::format("checkpoint {} (step {})", rc.path, m.step);
  return out;
}

}  // namespace tz
