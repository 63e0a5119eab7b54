// Architectures as data: the Hugging Face Llama and GPT-NeoX config.json files as published load
// with the right fields and parameter counts (the published totals, and the layout's), tierzero's
// own architecture keys round-trip, bad values are errors naming key and value, and every place that
// would build a trainable model refuses an architecture whose layers are not built.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "core/error.hpp"
#include "model/gpt_config.hpp"
#include "model/gpt_init.hpp"
#include "model/model_preset.hpp"
#include "model/parameter_layout.hpp"
#include "model/range_schedule.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

using test::expect_input_error;

std::string hf_fixture_path(const std::string& name) {
  return std::string(TZ_SOURCE_DIR) + "/tests/fixtures/hf_config/" + name + ".json";
}

nlohmann::json hf_fixture(const std::string& name) {
  std::ifstream in(hf_fixture_path(name));
  return nlohmann::json::parse(in);
}

struct Published {
  const char* name;
  std::uint64_t parameters;  // the model card's / paper's total
};

// Totals as published (model cards, papers), each also derived by hand in docs/model.md.
constexpr Published kPublished[] = {{"pythia-160m", 162322944},     {"gpt-neox-20b", 20554567680},
                                    {"tinyllama-1.1b", 1100048384}, {"smollm-135m", 134515008},
                                    {"llama-3.2-1b", 1235814400},   {"llama-3-8b", 8030261248}};

TEST(HfConfigFixtures, PublishedConfigsLoadWithTheirFieldsAndTotals) {
  for (const Published& p : kPublished) {
    const GptConfig c = GptConfig::load(hf_fixture_path(p.name));
    EXPECT_EQ(c.parameter_count(), p.parameters) << p.name;
    EXPECT_EQ(ParameterLayout(c).total_numel(), p.parameters) << p.name;
    // The preset of the same name is the published file plus its name and source.
    EXPECT_EQ(load_model(p.name).config, c) << p.name;
    EXPECT_FALSE(c.is_gpt2_architecture()) << p.name;
  }
  const GptConfig tiny = GptConfig::load(hf_fixture_path("tinyllama-1.1b"));
  EXPECT_EQ(tiny.family, ModelFamily::llama);
  EXPECT_EQ(tiny.n_layer, 22);
  EXPECT_EQ(tiny.n_embd, 2048);
  EXPECT_EQ(tiny.n_head, 32);
  EXPECT_EQ(tiny.kv_heads(), 4);
  EXPECT_EQ(tiny.mlp, MlpKind::swiglu);
  EXPECT_EQ(tiny.mlp_width(), 5632);
  EXPECT_EQ(tiny.norm, NormKind::rmsnorm);
  EXPECT_FALSE(tiny.norm_bias);
  EXPECT_EQ(tiny.norm_eps, 1e-5);
  EXPECT_EQ(tiny.positions, PositionKind::rotary);
  EXPECT_EQ(tiny.rope_theta, 10000);
  EXPECT_EQ(tiny.rotary_dims(), 64);
  EXPECT_FALSE(tiny.qkv_bias || tiny.attn_out_bias || tiny.mlp_bias);
  EXPECT_FALSE(tiny.tied_embeddings);
  EXPECT_EQ(tiny.residual, ResidualKind::sequential);
  EXPECT_EQ(tiny.n_positions, 2048);
  EXPECT_EQ(tiny.vocab_size, 32000);

  const GptConfig smol = GptConfig::load(hf_fixture_path("smollm-135m"));
  EXPECT_TRUE(smol.tied_embeddings);
  EXPECT_EQ(smol.kv_heads(), 3);
  EXPECT_EQ(smol.head_size(), 64);

  const GptConfig llama32 = GptConfig::load(hf_fixture_path("llama-3.2-1b"));
  EXPECT_EQ(llama32.rope_theta, 500000);
  EXPECT_EQ(llama32.rope_scaling, RopeScalingKind::llama3);
  EXPECT_EQ(llama32.rope_scaling_factor, 32);
  EXPECT_EQ(llama32.rope_low_freq_factor, 1);
  EXPECT_EQ(llama32.rope_high_freq_factor, 4);
  EXPECT_EQ(llama32.rope_original_positions, 8192);
  EXPECT_EQ(llama32.n_positions, 131072);
  EXPECT_EQ(load_model("llama-3.2-1b").seq_len(), 8192);  // the preset plans at its pre-training length

  const GptConfig pythia = GptConfig::load(hf_fixture_path("pythia-160m"));
  EXPECT_EQ(pythia.family, ModelFamily::gpt_neox);
  EXPECT_EQ(pythia.norm, NormKind::layernorm);
  EXPECT_TRUE(pythia.norm_bias && pythia.qkv_bias && pythia.attn_out_bias && pythia.mlp_bias);
  EXPECT_EQ(pythia.mlp, MlpKind::gelu_exact);  // "gelu" is erf GELU
  EXPECT_EQ(pythia.mlp_width(), 3072);
  EXPECT_EQ(pythia.rotary_fraction, 0.25);
  EXPECT_EQ(pythia.rotary_dims(), 16);
  EXPECT_EQ(pythia.residual, ResidualKind::parallel);
  EXPECT_FALSE(pythia.tied_embeddings);

  const GptConfig neox = GptConfig::load(hf_fixture_path("gpt-neox-20b"));
  EXPECT_EQ(neox.mlp, MlpKind::gelu_tanh);  // "gelu_fast" is the tanh form
  EXPECT_EQ(neox.rotary_dims(), 24);
  EXPECT_EQ(neox.n_layer, 44);
  EXPECT_EQ(neox.n_embd, 6144);
  EXPECT_EQ(neox.n_head, 64);
  EXPECT_EQ(load_model("gpt-20b").config, neox);  // the paper's 20B GPT is the exact NeoX
}

TEST(HfConfigFixtures, ValuesThatChangeTheComputationAreNamed) {
  struct Case {
    const char* fixture;
    const char* key;
    nlohmann::json value;
    const char* shown;
  };
  const Case cases[] = {
      {"tinyllama-1.1b", "rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}, "linear"},
      {"tinyllama-1.1b", "rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}, "dynamic"},
      {"tinyllama-1.1b", "sliding_window", 4096, "4096"},
      {"tinyllama-1.1b", "num_local_experts", 8, "mixture-of-experts"},
      {"tinyllama-1.1b", "num_experts_per_tok", 2, "mixture-of-experts"},
      {"tinyllama-1.1b", "head_dim", 128, "128"},
      {"tinyllama-1.1b", "hidden_act", "gelu", "gelu"},
      {"tinyllama-1.1b", "num_key_value_heads", 5, "5"},
      {"tinyllama-1.1b", "pretraining_tp", 2, "2"},
      {"tinyllama-1.1b", "rms_norm_eps", -1, "-1"},
      {"tinyllama-1.1b", "rope_theta", 0.5, "0.5"},
      {"tinyllama-1.1b", "model_type", "mistral", "mistral"},
      {"tinyllama-1.1b", "architectures", nlohmann::json::array({"GPTNeoXForCausalLM"}), "GPTNeoX"},
      {"tinyllama-1.1b", "rotary_pct", 0.5, "rotary_pct"},  // a NeoX key: unknown for llama
      {"tinyllama-1.1b", "attention_dropout", 1.5, "1.5"},
      {"tinyllama-1.1b", "eos_token_id", 32000, "32000"},
      {"pythia-160m", "hidden_act", "relu", "relu"},
      {"pythia-160m", "rotary_pct", 0.3, "0.3"},  // 64 x 0.3 = 19 dimensions: odd
      {"pythia-160m", "rotary_pct", 1.5, "1.5"},
      {"pythia-160m", "rope_theta", 500000, "500000"},  // disagrees with rotary_emb_base
      {"pythia-160m", "num_attention_heads", 7, "7"},
      {"pythia-160m", "num_key_value_heads", 4, "num_key_value_heads"},  // a Llama key: unknown here
      {"pythia-160m", "hidden_size", 0, "0"},
      {"pythia-160m", "rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}, "yarn"},
      {"pythia-160m", "model_type", "bert", "bert"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = hf_fixture(c.fixture);
    doc[c.key] = c.value;
    expect_input_error([&] { GptConfig::from_json(doc, "config.json"); }, {"config.json", c.key, c.shown});
  }
  // Accepted: keys that do not change the computation, dropout (reported), a window not in use.
  nlohmann::json ok = hf_fixture("tinyllama-1.1b");
  ok["sliding_window"] = 4096;
  ok["use_sliding_window"] = false;
  ok["head_dim"] = 64;
  ok["attention_dropout"] = 0.1;
  ok["eos_token_id"] = nlohmann::json::array({2, 1});
  ok["_name_or_path"] = "TinyLlama/TinyLlama-1.1B";
  std::vector<std::string> notes;
  EXPECT_EQ(GptConfig::from_json(ok, "config.json", &notes),
            GptConfig::load(hf_fixture_path("tinyllama-1.1b")));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("attention_dropout"), std::string::npos);
  // Absent keys take Hugging Face's defaults for the family.
  nlohmann::json bare = hf_fixture("pythia-160m");
  for (const char* key : {"rotary_pct", "rotary_emb_base", "use_parallel_residual", "tie_word_embeddings",
                          "hidden_act", "layer_norm_eps"})
    bare.erase(key);
  EXPECT_EQ(GptConfig::from_json(bare, "config.json"), GptConfig::load(hf_fixture_path("pythia-160m")));
  nlohmann::json missing = hf_fixture("tinyllama-1.1b");
  missing.erase("intermediate_size");
  expect_input_error([&] { GptConfig::from_json(missing, "config.json"); },
                     {"config.json", "intermediate_size"});
}

TEST(ArchitectureKeys, EveryPresetRoundTripsThroughToJson) {
  for (const std::string& name : model_preset_names()) {
    const GptConfig c = load_model(name).config;
    const nlohmann::json j = c.to_json();
    EXPECT_EQ(GptConfig::from_json(j, name), c) << name << ": " << j.dump();
    if (c.is_gpt2_architecture() && c.family == ModelFamily::gpt2) {
      EXPECT_EQ(j.size(), 5u) << name;  // GPT-2 writes the five shapes, as it always did
    }
  }
}

TEST(ArchitectureKeys, BadValuesAreNamed) {
  const nlohmann::json base = GptConfig::load("tinyllama-1.1b").to_json();
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* shown;
  };
  const Case cases[] = {
      {"n_kv_head", 3, "3"},
      {"norm", "batchnorm", "batchnorm"},
      {"norm_bias", true, "norm_bias"},  // RMSNorm has no bias
      {"mlp", "relu", "relu"},
      {"positions", "alibi", "alibi"},
      {"residual", "hybrid", "hybrid"},
      {"family", "bert", "bert"},
      {"norm_eps", 0, "0"},
      {"rotary_fraction", 0.01, "0.01"},
      {"model_type", "llama", "model_type"},
      {"activation_function", "gelu_new", "activation_function"},
      {"mlp_hiden", 10, "mlp_hiden"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = base;
    doc[c.key] = c.value;
    expect_input_error([&] { GptConfig::from_json(doc, "m.json"); }, {"m.json", c.key, c.shown});
  }
  nlohmann::json swiglu = base;
  swiglu.erase("mlp_hidden");
  expect_input_error([&] { GptConfig::from_json(swiglu, "m.json"); }, {"m.json", "mlp_hidden", "swiglu"});
  nlohmann::json learned = base;
  learned["positions"] = "learned";  // rope_theta 10000 and rotary_fraction 1 stay: the defaults
  learned["rope_theta"] = 500000;
  expect_input_error([&] { GptConfig::from_json(learned, "m.json"); }, {"m.json", "rope_theta", "learned"});
  // A GPT-2 model written with the architecture keys is the GPT-2 config.
  const nlohmann::json gpt2 = {{"n_layer", 2},      {"n_embd", 64},      {"n_head", 4},
                               {"n_positions", 32}, {"vocab_size", 256}, {"norm", "layernorm"},
                               {"mlp_hidden", 256}, {"n_kv_head", 4}};
  EXPECT_EQ(GptConfig::from_json(gpt2, "m.json"),
            (GptConfig{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 256}));
}

// Tiny configs of each family with their parameters counted by hand (docs/model.md's formula).
GptConfig tiny_llama() {
  return GptConfig{.n_layer = 2,
                   .n_embd = 64,
                   .n_head = 4,
                   .n_positions = 32,
                   .vocab_size = 100,
                   .family = ModelFamily::llama,
                   .norm = NormKind::rmsnorm,
                   .norm_bias = false,
                   .positions = PositionKind::rotary,
                   .n_kv_head = 2,
                   .qkv_bias = false,
                   .attn_out_bias = false,
                   .mlp = MlpKind::swiglu,
                   .mlp_hidden = 96,
                   .mlp_bias = false,
                   .tied_embeddings = false};
}
GptConfig tiny_neox() {
  return GptConfig{.n_layer = 2,
                   .n_embd = 64,
                   .n_head = 4,
                   .n_positions = 32,
                   .vocab_size = 100,
                   .family = ModelFamily::gpt_neox,
                   .positions = PositionKind::rotary,
                   .rotary_fraction = 0.25,
                   .mlp = MlpKind::gelu_exact,
                   .residual = ResidualKind::parallel,
                   .tied_embeddings = false};
}

TEST(ArchitectureLayout, TensorsOfEachFamilyAndTheirCounts) {
  // Llama: wte 6400; per block 2 RMSNorm 128, qkv (4 + 2 x 2) x 16 x 64 = 8192, out 4096,
  // gate+up 2 x 96 x 64 = 12288, down 6144; ln_f 64; lm_head 6400.
  const GptConfig llama = tiny_llama();
  EXPECT_EQ(llama.parameter_count(), 6400u + 2 * (128 + 8192 + 4096 + 12288 + 6144) + 64 + 6400);
  const ParameterLayout l(llama);
  EXPECT_EQ(l.total_numel(), llama.parameter_count());
  EXPECT_EQ(l.num_ranges(), 2 + 3);  // embeddings, 2 blocks, ln_f, lm_head
  EXPECT_EQ(l.head_range(), 4);
  EXPECT_EQ(l.range(4).name, "lm_head");
  EXPECT_EQ(l.tensor("h.0.attn.qkv.weight").shape, (std::vector<std::size_t>{128, 64}));
  EXPECT_EQ(l.tensor("h.1.mlp.fc.weight").shape, (std::vector<std::size_t>{192, 64}));
  EXPECT_EQ(l.tensor("h.1.mlp.proj.weight").shape, (std::vector<std::size_t>{64, 96}));
  EXPECT_EQ(l.range(1).numel, 128u + 8192 + 4096 + 12288 + 6144);
  for (const auto& t : l.tensors()) {
    EXPECT_EQ(t.name.find("bias"), std::string::npos) << t.name;
    EXPECT_NE(t.name, "wpe");
    EXPECT_EQ(t.tied, false) << t.name;
    EXPECT_EQ(t.weight_decay, t.shape.size() == 2) << t.name;
  }
  // NeoX: wte 6400; per block 2 LayerNorms 256, qkv 12288 + 192, out 4096 + 64, fc 16384 + 256,
  // proj 16384 + 64; ln_f 128; lm_head 6400.
  const GptConfig neox = tiny_neox();
  EXPECT_EQ(neox.parameter_count(), 6400u + 2 * (256 + 12480 + 4160 + 16640 + 16448) + 128 + 6400);
  EXPECT_EQ(ParameterLayout(neox).total_numel(), neox.parameter_count());
  // The GPT-2 layout is unchanged: wpe second, every bias, the tied wte.
  const ParameterLayout g(
      GptConfig{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 100});
  EXPECT_EQ(g.num_ranges(), 4);
  EXPECT_EQ(g.head_range(), 0);
  EXPECT_TRUE(g.tensor("wte").tied);
  EXPECT_EQ(g.total_numel(), 100u * 64 + 32 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64);
  for (const std::string& name : model_preset_names()) {
    const GptConfig c = load_model(name).config;
    EXPECT_EQ(ParameterLayout(c).total_numel(), c.parameter_count()) << name;
  }
}

TEST(ArchitectureLayout, AnUntiedHeadIsItsOwnRangeAfterTheFinalNorm) {
  const GptConfig c = tiny_llama();  // E = 0, blocks 1-2, F = 3, H = 4
  EXPECT_EQ(forward_acquire_order(c), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(backward_acquire_order(c), (std::vector<int>{4, 3, 2, 1, 0}));
  EXPECT_EQ(grads_ready_order(c), (std::vector<int>{4, 3, 2, 1, 0}));
  GptConfig tied = c;
  tied.tied_embeddings = true;  // the GPT-2 protocol: the embeddings serve the head
  EXPECT_EQ(forward_acquire_order(tied), (std::vector<int>{0, 1, 2, 3, 0}));
  EXPECT_EQ(backward_acquire_order(tied), (std::vector<int>{0, 3, 2, 1}));
  EXPECT_EQ(grads_ready_order(tied), (std::vector<int>{3, 2, 1, 0}));
}

TEST(ArchitectureRefusal, GptTwoOnlyFormatsRefuseOtherArchitecturesNamingFamilyAndPiece) {
  struct Case {
    const char* preset;
    const char* piece;
  };
  for (const Case& c : {Case{"tinyllama-1.1b", "RMSNorm"}, Case{"llama-3-8b", "RMSNorm"},
                        Case{"pythia-160m", "rotary positions"}, Case{"gpt-neox-20b", "rotary positions"}}) {
    const GptConfig config = load_model(c.preset).config;
    expect_input_error([&] { require_gpt2_layers(config, "train"); },
                       {"train", model_family_name(config.family).data(), c.piece, "GPT-2"});
  }
  GptConfig gqa = GptConfig{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 100};
  gqa.n_kv_head = 2;
  expect_input_error([&] { require_gpt2_layers(gqa, "sample"); }, {"sample", "gpt2", "grouped-query"});
  GptConfig untied = GptConfig{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 100};
  untied.tied_embeddings = false;
  expect_input_error([&] { require_gpt2_layers(untied, "export"); }, {"export", "untied"});
  GptConfig parallel = untied;
  parallel.tied_embeddings = true;
  parallel.residual = ResidualKind::parallel;
  expect_input_error([&] { require_gpt2_layers(parallel, "x"); }, {"parallel residual"});
  EXPECT_NO_THROW(require_gpt2_layers(load_model("gpt2").config, "train"));
}

TEST(ArchitectureInit, EveryFamilyInitialisesMatricesNormGainsAndBiases) {
  const ParameterLayout layout(tiny_llama());
  std::vector<float> params(layout.total_numel());
  gpt2_init(params.data(), layout, 1);
  for (const ParamTensor& t : layout.tensors()) {
    const float* v = params.data() + t.offset;
    double sum_sq = 0;
    for (std::size_t i = 0; i < t.numel; ++i) sum_sq += double(v[i]) * v[i];
    if (t.shape.size() == 2)
      EXPECT_GT(sum_sq, 0) << t.name;  // N(0, 0.02) or the residual scale
    else if (t.name.ends_with(".weight"))
      EXPECT_EQ(sum_sq, double(t.numel)) << t.name;  // norm gains 1
    else
      EXPECT_EQ(sum_sq, 0) << t.name;  // biases 0
  }
}

}  // namespace
}  // namespace tz
