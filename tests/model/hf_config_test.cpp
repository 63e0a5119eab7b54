// A Hugging Face GPT-2 config.json as published loads; keys that would change the computation to
// something tierzero does not compute are errors naming key and value; dropout is accepted and
// reported (tierzero trains without it).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/gpt_config.hpp"
#include "model/model_preset.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

using test::expect_input_error;

// openai-community/gpt2's config.json as Hugging Face publishes it.
constexpr const char* kGpt2Config = R"({
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
})";

TEST(HuggingFaceConfig, PublishedGpt2Loads) {
  test::ScratchDir dir;
  const std::string path = dir.write("config.json", kGpt2Config);
  const ModelPreset m = load_model(path);
  EXPECT_EQ(
      m.config,
      (GptConfig{.n_layer = 12, .n_embd = 768, .n_head = 12, .n_positions = 1024, .vocab_size = 50257}));
  EXPECT_EQ(m.notes.size(), 3u);  // attn_pdrop, embd_pdrop, resid_pdrop: not applied
  for (const auto& n : m.notes) EXPECT_NE(n.find("without dropout"), std::string::npos) << n;
  // The same shape as the preset.
  EXPECT_EQ(m.config, load_model("gpt2").config);
}

TEST(HuggingFaceConfig, ValuesTierzeroDoesNotComputeAreErrors) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* shown;
  };
  const Case cases[] = {
      {"activation_function", "relu", "\"relu\""},
      {"activation_function", "gelu", "\"gelu\""},
      {"layer_norm_epsilon", 1e-6, "1e-06"},
      {"initializer_range", 0.01, "0.01"},
      {"scale_attn_weights", false, "false"},
      {"scale_attn_by_inverse_layer_idx", true, "true"},
      {"n_inner", 1000, "1000"},
      {"tie_word_embeddings", false, "false"},
      {"add_cross_attention", true, "true"},
      {"attn_pdrop", 1.5, "1.5"},
      {"architectures", nlohmann::json::array({"BertModel"}), "BertModel"},
      {"bos_token_id", 60000, "60000"},
      {"rotary_dim", 64, "rotary_dim"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = nlohmann::json::parse(kGpt2Config);
    doc[c.key] = c.value;
    expect_input_error([&] { GptConfig::from_json(doc, "config.json"); }, {"config.json", c.key, c.shown});
  }
  // Accepted values of the same keys.
  nlohmann::json ok = nlohmann::json::parse(kGpt2Config);
  ok["activation_function"] = "gelu_pytorch_tanh";
  ok["n_inner"] = nullptr;
  ok["scale_attn_weights"] = true;
  ok["reorder_and_upcast_attn"] = false;
  ok["use_cache"] = true;
  ok["torch_dtype"] = "float32";
  ok["transformers_version"] = "4.40.0";
  EXPECT_NO_THROW(GptConfig::from_json(ok, "config.json"));
  ok["n_inner"] = 4 * 768;
  EXPECT_NO_THROW(GptConfig::from_json(ok, "config.json"));
}

}  // namespace
}  // namespace tz
