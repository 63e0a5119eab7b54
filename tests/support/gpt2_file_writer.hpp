// Writers for the two exported GPT-2 formats tierzero reads (safetensors with Hugging Face's names,
// llm.c's model file), written here from their published definitions and independently of the
// reader (train/exported_weights.cpp), so that the tests compare two implementations.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz::test {

struct StTensor {
  std::string name;
  std::string dtype;  // "F32" or "BF16" (values must then be bf16-exact: low 16 bits zero)
  std::vector<std::uint64_t> shape;
  std::vector<float> values;
};

inline void put_value(std::string& out, float v, const std::string& dtype) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (dtype == "BF16") {
    const std::uint16_t top = static_cast<std::uint16_t>(bits >> 16);
    out.append(reinterpret_cast<const char*>(&top), 2);
  } else {
    out.append(reinterpret_cast<const char*>(&bits), 4);
  }
}

inline std::string safetensors_bytes(const std::vector<StTensor>& tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const auto& t : tensors) {
    const std::size_t begin = data.size();
    for (float v : t.values) put_value(data, v, t.dtype);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  const std::uint64_t n = text.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + text + data;
}

// (rows, cols) row-major -> (cols, rows).
inline std::vector<float> transposed(const float* p, std::size_t rows, std::size_t cols) {
  std::vector<float> t(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = p[r * cols + c];
  return t;
}

// GPT2Model's state dict of the model in `params` (ParameterLayout order), Conv1D weights (in, out).
inline std::vector<StTensor> hf_gpt2_tensors(const ParameterLayout& layout, const float* params,
                                             const std::string& prefix, const std::string& dtype) {
  const GptConfig& m = layout.config();
  std::vector<StTensor> out;
  auto plain = [&](const std::string& hf, const std::string& tz_name) {
    const ParamTensor& t = layout.tensor(tz_name);
    out.push_back({prefix + hf,
                   dtype,
                   {t.shape.begin(), t.shape.end()},
                   std::vector<float>(params + t.offset, params + t.offset + t.numel)});
  };
  auto conv1d = [&](const std::string& hf, const std::string& tz_name) {
    const ParamTensor& t = layout.tensor(tz_name);  // (out, in)
    out.push_back({prefix + hf,
                   dtype,
                   {t.shape[1], t.shape[0]},
                   transposed(params + t.offset, t.shape[0], t.shape[1])});
  };
  plain("wte.weight", "wte");
  plain("wpe.weight", "wpe");
  for (int l = 0; l < m.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    plain(h + "ln_1.weight", h + "ln_1.weight");
    plain(h + "ln_1.bias", h + "ln_1.bias");
    conv1d(h + "attn.c_attn.weight", h + "attn.qkv.weight");
    plain(h + "attn.c_attn.bias", h + "attn.qkv.bias");
    conv1d(h + "attn.c_proj.weight", h + "attn.proj.weight");
    plain(h + "attn.c_proj.bias", h + "attn.proj.bias");
    plain(h + "ln_2.weight", h + "ln_2.weight");
    plain(h + "ln_2.bias", h + "ln_2.bias");
    conv1d(h + "mlp.c_fc.weight", h + "mlp.fc.weight");
    plain(h + "mlp.c_fc.bias", h + "mlp.fc.bias");
    conv1d(h + "mlp.c_proj.weight", h + "mlp.proj.weight");
    plain(h + "mlp.c_proj.bias", h + "mlp.proj.bias");
  }
  plain("ln_f.weight", "ln_f.weight");
  plain("ln_f.bias", "ln_f.bias");
  return out;
}

// llm.c's write_model: the 256-word header, then the 16 layer-stacked tensors; wte padded to Vp rows
// with `pad_value` (llm.c writes zeros; the reader must ignore them whatever they are).
inline std::string llmc_bytes(const ParameterLayout& layout, const float* params, int version, int Vp,
                              float pad_value = 0) {
  const GptConfig& m = layout.config();
  const std::string dtype = version == 3 ? "F32" : "BF16";
  std::int32_t header[256] = {};
  header[0] = 20240326;
  header[1] = version;
  header[2] = m.n_positions;
  header[3] = m.vocab_size;
  header[4] = m.n_layer;
  header[5] = m.n_head;
  header[6] = m.n_embd;
  header[7] = Vp;
  std::string out(reinterpret_cast<const char*>(header), sizeof(header));
  auto put = [&](const std::string& name) {
    const ParamTensor& t = layout.tensor(name);
    for (std::size_t i = 0; i < t.numel; ++i) put_value(out, params[t.offset + i], dtype);
  };
  put("wte");
  for (std::size_t i = 0; i < static_cast<std::size_t>(Vp - m.vocab_size) * m.n_embd; ++i)
    put_value(out, pad_value, dtype);
  put("wpe");
  for (const char* suffix :
       {"ln_1.weight", "ln_1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
        "ln_2.weight", "ln_2.bias", "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"})
    for (int l = 0; l < m.n_layer; ++l) put("h." + std::to_string(l) + "." + suffix);
  put("ln_f.weight");
  put("ln_f.bias");
  return out;
}

}  // namespace tz::test
