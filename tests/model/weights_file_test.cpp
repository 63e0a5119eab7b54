// Parameter files read back exactly, and every field of a damaged one named: the config, the count,
// a tensor's name, offset or shape, the file's size. The activation sizes the memory check uses
// equal what the model allocates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "core/json_read.hpp"
#include "model/activation_floats.hpp"
#include "model/gpt.hpp"
#include "model/gpt_init.hpp"
#include "model/parameter_file.hpp"
#include "model/weights_file.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

using test::expect_input_error;

const GptConfig kFileCfg{.n_layer = 2, .n_embd = 12, .n_head = 3, .n_positions = 9, .vocab_size = 31};

std::string write_weights(const test::ScratchDir& dir) {
  const ParameterLayout layout(kFileCfg);
  std::vector<float> p(layout.total_numel());
  gpt2_init(p.data(), layout, 5);
  const std::string path = dir.path("w.bin");
  write_parameter_file(path, layout, p.data());
  return path;
}

TEST(WeightsFile, RoundTripsExactly) {
  test::ScratchDir dir;
  const std::string path = write_weights(dir);
  const ModelWeights w = read_parameter_file(path);
  EXPECT_EQ(w.config, kFileCfg);
  std::vector<float> p(ParameterLayout(kFileCfg).total_numel());
  gpt2_init(p.data(), ParameterLayout(kFileCfg), 5);
  EXPECT_EQ(w.params, p);
}

TEST(WeightsFile, DamageIsNamed) {
  test::ScratchDir dir;
  const std::string path = write_weights(dir);
  const nlohmann::json good = read_json_file(path + ".json");
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(path + ".json") << j.dump();
  };
  with([](nlohmann::json& j) { j["numel"] = 7; });
  expect_input_error([&] { read_parameter_file(path); }, {path + ".json", "numel", "7"});
  with([](nlohmann::json& j) { j["tensors"][2]["name"] = "h.0.ln_9.weight"; });
  expect_input_error([&] { read_parameter_file(path); }, {"tensors[2]", "h.0.ln_9.weight"});
  with([](nlohmann::json& j) { j["tensors"][3]["shape"] = {1, 2}; });
  expect_input_error([&] { read_parameter_file(path); }, {"tensors[3]", "shape"});
  with([](nlohmann::json& j) { j["dtype"] = "bf16"; });
  expect_input_error([&] { read_parameter_file(path); }, {"dtype", "bf16"});
  with([](nlohmann::json& j) { j["config"]["n_head"] = 5; });
  expect_input_error([&] { read_parameter_file(path); }, {"n_head"});
  with([](nlohmann::json&) {});
  std::filesystem::resize_file(path, 100);
  expect_input_error([&] { read_parameter_file(path); }, {path, "100 bytes"});
}

TEST(ActivationFloats, EqualWhatTheModelAllocates) {
  // GPT-2 shapes, a Llama (grouped-query 4:1, SwiGLU of width 24) and a NeoX (exact GELU of width 40).
  GptConfig llama{.n_layer = 2, .n_embd = 16, .n_head = 4, .n_positions = 20, .vocab_size = 50};
  llama.norm = NormKind::rmsnorm;
  llama.norm_bias = false;
  llama.positions = PositionKind::rotary;
  llama.n_kv_head = 1;
  llama.mlp = MlpKind::swiglu;
  llama.mlp_hidden = 24;
  llama.tied_embeddings = false;
  GptConfig neox{.n_layer = 2, .n_embd = 16, .n_head = 2, .n_positions = 20, .vocab_size = 50};
  neox.positions = PositionKind::rotary;
  neox.rotary_fraction = 0.25;
  neox.mlp = MlpKind::gelu_exact;
  neox.mlp_hidden = 40;
  neox.residual = ResidualKind::parallel;
  for (const GptConfig& c :
       {kFileCfg, GptConfig{.n_layer = 3, .n_embd = 16, .n_head = 2, .n_positions = 20, .vocab_size = 50},
        llama, neox})
    for (bool recompute : {false, true})
      for (auto [B, T] : {std::pair{1, 1}, {2, 9}, {3, 7}}) {
        if (T > c.n_positions) continue;
        const Gpt model(c, B, T, {.recompute = recompute});
        EXPECT_EQ(gpt_activation_floats(c, B, T, recompute), double(model.activation_floats()))
            << B << "x" << T << " recompute " << recompute;
      }
  // Sizes from input never wrap: a micro-batch of 1e9 is a large finite number of floats.
  EXPECT_GT(gpt_activation_floats(kFileCfg, 1e9, 9, false), 1e12);
}

}  // namespace
}  // namespace tz
