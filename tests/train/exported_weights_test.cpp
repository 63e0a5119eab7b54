// The exported GPT-2 files `tierzero sample` reads (train/exported_weights.hpp), against writers made
// from the formats' definitions (tests/support/gpt2_file_writer.hpp): every parameter read back
// bitwise (fp32, and bf16 values widened exactly), the Conv1D transposes, the "transformer." prefix,
// the ignored mask buffers and tied head, llm.c's padded vocabulary rows; then each kind of bad file
// is one InputError naming the file and the tensor or header word.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <limits>
#include <random>

#include "model/parameter_file.hpp"
#include "model/parameter_layout.hpp"
#include "support/expect_input_error.hpp"
#include "support/gpt2_file_writer.hpp"
#include "support/scratch_dir.hpp"
#include "train/exported_weights.hpp"
#include "train/weights_source.hpp"

namespace tz {
namespace {

using test::expect_input_error;

const GptConfig kModel{.n_layer = 2, .n_embd = 8, .n_head = 2, .n_positions = 6, .vocab_size = 11};

// Distinct values, so a tensor read into the wrong place or untransposed shows.
std::vector<float> random_params(const ParameterLayout& layout, bool bf16_exact) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> p(layout.total_numel());
  for (float& v : p) {
    v = u(rng);
    if (bf16_exact) {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bits &= 0xffff0000u;
      std::memcpy(&v, &bits, 4);
    }
  }
  return p;
}

void expect_bitwise(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      ADD_FAILURE() << "first difference at element " << i << ": " << got[i] << " vs " << want[i];
      break;
    }
}

TEST(ExportedWeights, SafetensorsReadsEveryTensorTransposedWhereConv1D) {
  const ParameterLayout layout(kModel);
  test::ScratchDir dir;
  for (const char* dtype : {"F32", "BF16"}) {
    const auto params = random_params(layout, std::string(dtype) == "BF16");
    for (const std::string prefix : {"", "transformer."}) {
      SCOPED_TRACE(std::string(dtype) + " prefix '" + prefix + "'");
      auto tensors = test::hf_gpt2_tensors(layout, params.data(), prefix, dtype);
      // What files from the hub also carry: the mask buffers and the (tied) LM head.
      tensors.push_back({prefix + "h.0.attn.bias", "F32", {1, 1, 6, 6}, std::vector<float>(36, 1.0f)});
      tensors.push_back({prefix + "h.1.attn.masked_bias", "F32", {}, {-1e4f}});
      const ParamTensor& wte = layout.tensor("wte");
      tensors.push_back(
          {"lm_head.weight",
           dtype,
           {11, 8},
           std::vector<float>(params.begin() + wte.offset, params.begin() + wte.offset + wte.numel)});
      const std::string path = dir.write("m.safetensors", test::safetensors_bytes(tensors));
      const ModelWeights w = read_safetensors_gpt2(path, kModel);
      EXPECT_EQ(w.config, kModel);
      expect_bitwise(w.params, params);
    }
  }
}

TEST(ExportedWeights, SafetensorsShapeFromConfigJsonBeside) {
  const ParameterLayout layout(kModel);
  const auto params = random_params(layout, false);
  test::ScratchDir dir;
  const std::string path = dir.write(
      "model.safetensors", test::safetensors_bytes(test::hf_gpt2_tensors(layout, params.data(), "", "F32")));
  expect_input_error([&] { load_model_weights(path); }, {"--weights " + path, "pass --model"});
  dir.write("config.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 8, "n_head": 2, "n_positions": 6,
                               "vocab_size": 11, "activation_function": "gelu_new"})");
  const ModelWeights w = load_model_weights(path);
  EXPECT_EQ(w.config, kModel);
  expect_bitwise(w.params, params);
}

TEST(ExportedWeights, LlmcReadsBothVersionsAndSkipsPaddedRows) {
  const ParameterLayout layout(kModel);
  test::ScratchDir dir;
  for (int version : {3, 5}) {
    SCOPED_TRACE(version);
    const auto params = random_params(layout, version == 5);
    const std::string path = dir.write("m.bin", test::llmc_bytes(layout, params.data(), version, 128, 9.5f));
    EXPECT_TRUE(has_llmc_model_magic(path));
    const ModelWeights w = load_model_weights(path);  // told apart by the magic
    EXPECT_EQ(w.config, kModel);
    expect_bitwise(w.params, params);
  }
}

TEST(ExportedWeights, BadSafetensorsNameTheFileAndTensor) {
  const ParameterLayout layout(kModel);
  const auto params = random_params(layout, false);
  test::ScratchDir dir;
  const auto good = test::hf_gpt2_tensors(layout, params.data(), "", "F32");
  auto write = [&](std::vector<test::StTensor> t) {
    return dir.write("bad.safetensors", test::safetensors_bytes(t));
  };

  auto missing = good;
  missing.erase(missing.begin() + 5);  // h.0.attn.c_attn.bias
  std::string p = write(missing);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p, "tensor 'h.0.attn.c_attn.bias' is missing"});

  // A model of another width: the first tensor's shape names both.
  p = write(good);
  GptConfig wider = kModel;
  wider.n_embd = 16;
  expect_input_error([&] { read_safetensors_gpt2(p, wider); },
                     {"safetensors " + p, "tensor 'wte.weight': expected shape [11, 16], found [11, 8]"});
  // Untransposed Conv1D weights (a file written from nn.Linear by mistake).
  auto linear = good;
  for (auto& t : linear)
    if (t.name == "h.1.mlp.c_fc.weight") t.shape = {32, 8};
  p = write(linear);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"tensor 'h.1.mlp.c_fc.weight': expected shape [8, 32], found [32, 8]"});

  auto extra = good;
  extra.push_back({"h.2.ln_1.weight", "F32", {8}, std::vector<float>(8)});
  p = write(extra);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"tensor 'h.2.ln_1.weight' is not a GPT-2 tensor of this model"});

  auto untied = good;
  untied.push_back({"lm_head.weight", "F32", {11, 8}, good[0].values});
  untied.back().values[17] += 1;
  p = write(untied);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"'lm_head.weight' differs from 'wte.weight' at element 17"});

  auto f16 = good;
  f16[1].dtype = "F16";  // bytes as BF16's: only the dtype name is wrong
  p = write(f16);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"tensor 'wpe.weight'", "dtype expected F32 or BF16, found F16"});

  // Truncated: the data section ends before the last tensor's offsets.
  std::string bytes = test::safetensors_bytes(good);
  p = dir.write("cut.safetensors", bytes.substr(0, bytes.size() - 5));
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p, "outside the data section"});
  // A header size past the end of the file (a file of another format).
  std::string huge = bytes;
  const std::uint64_t n = 1ull << 40;
  std::memcpy(huge.data(), &n, 8);
  p = dir.write("huge.safetensors", huge);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p, "header size 1099511627776 at byte 0 does not fit the file"});
  p = dir.write("json.safetensors", std::string("\x04\0\0\0\0\0\0\0{\"a\"", 12));
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); }, {"safetensors " + p});
}

TEST(ExportedWeights, BadLlmcFilesNameTheHeaderWord) {
  const ParameterLayout layout(kModel);
  const auto params = random_params(layout, false);
  test::ScratchDir dir;
  const std::string good = test::llmc_bytes(layout, params.data(), 3, 16);
  auto with_word = [&](int word, std::int32_t value) {
    std::string b = good;
    std::memcpy(b.data() + 4 * word, &value, 4);
    return dir.write("bad.bin", b);
  };
  std::string p = with_word(1, 4);
  expect_input_error([&] { read_llmc_model(p); },
                     {"llm.c checkpoint " + p, "version at byte 4: expected 3 (fp32) or 5 (bf16), found 4"});
  p = with_word(7, 10);
  expect_input_error([&] { read_llmc_model(p); },
                     {"padded vocabulary (word 7) 10 is smaller than the vocabulary 11"});
  p = with_word(5, 3);
  expect_input_error([&] { read_llmc_model(p); }, {"llm.c checkpoint " + p, "n_head"});
  p = with_word(4, 3);  // one layer more than the file holds
  expect_input_error([&] { read_llmc_model(p); },
                     {"llm.c checkpoint " + p, "bytes (header + 2808 parameters of f32), found 8768"});
  p = dir.write("short.bin", good.substr(0, good.size() - 4));
  expect_input_error([&] { read_llmc_model(p); },
                     {"llm.c checkpoint " + p, "expected 8768 bytes", "found 8764"});
  p = with_word(0, 20240327);
  EXPECT_FALSE(has_llmc_model_magic(p));
  expect_input_error([&] { load_model_weights(p); }, {"--weights " + p, "not a parameter file"});
  expect_input_error([&] { read_llmc_model(p); }, {"magic at byte 0: expected 20240326, found 20240327"});
}

TEST(ExportedWeights, SafetensorsOffsetsMustTileTheDataSection) {
  const ParameterLayout layout(kModel);
  const auto params = random_params(layout, false);
  test::ScratchDir dir;
  const std::string good = test::safetensors_bytes(test::hf_gpt2_tensors(layout, params.data(), "", "F32"));
  std::uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  // Rewrites one tensor's data_offsets (the header keeps its length: padded back to n bytes).
  auto with_offsets = [&](const std::string& name, std::uint64_t begin, std::uint64_t end) {
    nlohmann::json j = nlohmann::json::parse(good.substr(8, n));
    j[name]["data_offsets"] = {begin, end};
    std::string text = j.dump();
    EXPECT_LE(text.size(), n);
    text.append(n - text.size(), ' ');
    return dir.write("edited.safetensors", good.substr(0, 8) + text + good.substr(8 + n));
  };
  nlohmann::json j = nlohmann::json::parse(good.substr(8, n));
  const std::uint64_t wpe_begin = j["wpe.weight"]["data_offsets"][0],
                      wpe_end = j["wpe.weight"]["data_offsets"][1];
  // wpe's offsets moved onto wte's bytes: two tensors share bytes, and wpe's own bytes are nobody's.
  std::string p = with_offsets("wpe.weight", 0, wpe_end - wpe_begin);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p, "overlap tensor", "'wpe.weight'", "'wte.weight'"});
  // The last tensor moved 4 bytes on (into the next one's place would be an overlap; here a gap).
  const std::uint64_t lb = j["ln_f.bias"]["data_offsets"][0], le = j["ln_f.bias"]["data_offsets"][1];
  std::string shifted = good;
  shifted += std::string(4, '\0');  // the data section grows by the gap
  dir.write("base.safetensors", shifted);
  {
    nlohmann::json k = nlohmann::json::parse(good.substr(8, n));
    k["ln_f.bias"]["data_offsets"] = {lb + 4, le + 4};
    std::string text = k.dump();
    text.append(n - text.size(), ' ');
    p = dir.write("gap.safetensors", good.substr(0, 8) + text + shifted.substr(8 + n));
  }
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p, "'ln_f.bias'", fmt::format("leaving bytes [{}, {})", lb, lb + 4)});
  // Bytes after the last tensor.
  p = dir.write("tail.safetensors", shifted);
  expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                     {"safetensors " + p,
                      fmt::format("end at byte {} of the data section, but it has {} bytes", le, le + 4)});
}

TEST(ExportedWeights, NonFiniteWeightsAreRefusedNamingTensorAndElement) {
  const ParameterLayout layout(kModel);
  test::ScratchDir dir;
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity()};
  for (float bad : bad_values) {
    auto params = random_params(layout, true);
    params[layout.tensor("wte").offset + 5] = bad;
    // safetensors, F32 and BF16
    for (const char* dtype : {"F32", "BF16"}) {
      const std::string p =
          dir.write("nan.safetensors",
                    test::safetensors_bytes(test::hf_gpt2_tensors(layout, params.data(), "", dtype)));
      expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                         {"safetensors " + p, "tensor 'wte.weight'", "element 5", "must be finite"});
    }
    // llm.c
    std::string p = dir.write("nan.bin", test::llmc_bytes(layout, params.data(), 3, 16));
    expect_input_error([&] { read_llmc_model(p); },
                       {"llm.c checkpoint " + p, "tensor 'wte'", "element 5", "must be finite"});
    // A transposed matrix: the element is named in tierzero's (out, in) order.
    params = random_params(layout, true);
    const ParamTensor& fc = layout.tensor("h.1.mlp.fc.weight");  // (32, 8), stored (8, 32)
    params[fc.offset + 3 * 8 + 2] = bad;
    p = dir.write("nan_t.safetensors",
                  test::safetensors_bytes(test::hf_gpt2_tensors(layout, params.data(), "", "F32")));
    expect_input_error([&] { read_safetensors_gpt2(p, kModel); },
                       {"tensor 'h.1.mlp.c_fc.weight'", "h.1.mlp.fc.weight", "element 26"});
    // a parameter file (train --weights-out)
    p = dir.path("nan_params.bin");
    write_parameter_file(p, layout, params.data());
    expect_input_error([&] { load_model_weights(p); },
                       {"parameter file " + p, "tensor 'h.1.mlp.fc.weight' element 26", "must be finite"});
  }
  // llm.c's padded vocabulary rows are never read: a NaN there is no error.
  const auto params = random_params(layout, false);
  const std::string p = dir.write(
      "pad.bin", test::llmc_bytes(layout, params.data(), 3, 16, std::numeric_limits<float>::quiet_NaN()));
  EXPECT_NO_THROW(read_llmc_model(p));
}

// A header or config.json that announces 100000 layers beside a small file: refused from the sizes
// alone, before a table of 1.2 million tensors is built (that took minutes).
TEST(ExportedWeights, AHugeLayerCountIsRefusedAtOnce) {
  const ParameterLayout layout(kModel);
  const auto params = random_params(layout, false);
  test::ScratchDir dir;
  std::string llmc = test::llmc_bytes(layout, params.data(), 3, 16);
  const std::int32_t layers = 100000;
  std::memcpy(llmc.data() + 4 * 4, &layers, 4);
  const std::string p = dir.write("deep.bin", llmc);
  auto t0 = std::chrono::steady_clock::now();
  expect_input_error([&] { load_model_weights(p); },
                     {"llm.c checkpoint " + p, "the header says L 100000", "found 8768"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);

  const std::string st = dir.write(
      "model.safetensors", test::safetensors_bytes(test::hf_gpt2_tensors(layout, params.data(), "", "F32")));
  GptConfig deep = kModel;
  deep.n_layer = layers;
  dir.write("config.json", deep.to_json().dump());
  t0 = std::chrono::steady_clock::now();
  expect_input_error([&] { load_model_weights(st); },
                     {"safetensors " + st, "tensor 'h.2.ln_1.weight' is missing", "holds 28 tensors",
                      "a GPT-2 of 100000 layers has 1200004"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(ExportedWeights, CheckpointDirectoryIsNamed) {
  test::ScratchDir dir;
  // Read by the checkpoint layer: an empty directory holds no checkpoint, and the error says so.
  expect_input_error([&] { load_model_weights(dir.path("")); },
                     {"--weights", "tierzero checkpoint", dir.path("")});
}

}  // namespace
}  // namespace tz
