// Config reading, the parameter layout's size table, decay segments, the range schedule (checked
// against the calls a real forward/backward makes), initialisation and the FLOP formula.
#include "engine/decay_segments.hpp"
#include "model/parameter_layout.hpp"
#include "support/expect_input_error.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "model/flops.hpp"
#include "model/gpt.hpp"
#include "model/gpt_init.hpp"
#include "model/model_preset.hpp"
#include "model/range_schedule.hpp"

namespace tz {
namespace {

using test::expect_input_error;

TEST(GptConfig, PresetsMatchConfigFiles) {
  for (const char* name : {"gpt-tiny", "gpt-small"}) {
    std::string path = std::string(TZ_SOURCE_DIR) + "/configs/" + name + ".json";
    EXPECT_EQ(GptConfig::load(path), GptConfig::load(name)) << path;
  }
  GptConfig neox = GptConfig::load("gpt-neox-20b");
  EXPECT_EQ(neox.n_layer, 44);
  EXPECT_EQ(neox.n_embd, 6144);
}

// One model format for every command: presets by name or alias, the models/ files and GPT-2 style
// config.json files all load the same way.
TEST(ModelPreset, NamesAliasesAndBothFileKindsLoad) {
  EXPECT_EQ(load_model("gpt2").name, "gpt2-small");
  EXPECT_EQ(load_model("gpt-neox-20b").config, load_model("gpt-20b").config);
  for (const std::string& name : model_preset_names()) {
    const ModelPreset preset = load_model(name);
    EXPECT_FALSE(preset.source.empty()) << name;
    const std::string path = std::string(TZ_SOURCE_DIR) + "/models/" + name + ".json";
    EXPECT_EQ(GptConfig::load(path), preset.config) << path;
  }
  EXPECT_EQ(load_model(std::string(TZ_SOURCE_DIR) + "/configs/gpt-tiny.json").config,
            load_model("gpt-tiny").config);
  expect_input_error([] { load_model("gpt-9000"); }, {"gpt-9000", "gpt2-small (or gpt2)"});
  auto doc = nlohmann::json::parse(R"({"n_layer": 2, "n_embd": 48, "n_head": 3, "n_positions": 16,
                                       "vocab_size": 61, "aliases": "x"})");
  expect_input_error([&] { model_preset_from_json(doc, "m.json"); }, {"m.json", "aliases"});
}

TEST(GptConfig, StrictKeysAndOneLineErrors) {
  auto doc = nlohmann::json::parse(
      R"({"n_layer": 2, "n_embd": 48, "n_head": 3, "n_positions": 16, "vocab_size": 61})");
  EXPECT_EQ(GptConfig::from_json(doc, "x").head_size(), 16);
  auto bad = doc;
  bad["n_heads"] = 3;
  expect_input_error([&] { GptConfig::from_json(bad, "m.json"); }, {"m.json", "n_heads"});
  bad = doc;
  bad["n_head"] = 5;
  expect_input_error([&] { GptConfig::from_json(bad, "m.json"); }, {"m.json", "n_head", "48"});
  bad = doc;
  bad["n_layer"] = 0;
  expect_input_error([&] { GptConfig::from_json(bad, "m.json"); }, {"n_layer"});
  bad = doc;
  bad["n_ctx"] = 17;
  expect_input_error([&] { GptConfig::from_json(bad, "m.json"); }, {"n_ctx", "16"});
  expect_input_error([&] { GptConfig::load("no-such-model"); }, {"no-such-model", "gpt-tiny"});
}

TEST(ParameterLayout, RangesAreContiguousAndSizesFollowTheShapes) {
  GptConfig c{.n_layer = 3, .n_embd = 10, .n_head = 2, .n_positions = 7, .vocab_size = 13};
  ParameterLayout l(c);
  ASSERT_EQ(l.num_ranges(), 5);
  EXPECT_EQ(l.range(0).numel, 13u * 10 + 7u * 10);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.range(l.block_range(i)).numel, 12u * 100 + 13u * 10) << i;
  EXPECT_EQ(l.range(l.final_ln_range()).numel, 20u);
  std::size_t off = 0, sum = 0;
  for (const auto& r : l.ranges()) {
    EXPECT_EQ(r.offset, off);
    off += r.numel;
  }
  for (auto s : l.range_sizes()) sum += s;
  EXPECT_EQ(sum, l.total_numel());
  // Tensors tile the buffer in order and sit inside their range.
  off = 0;
  for (const auto& t : l.tensors()) {
    EXPECT_EQ(t.offset, off) << t.name;
    EXPECT_EQ(t.offset - l.range(t.range).offset, t.range_offset) << t.name;
    EXPECT_LE(t.range_offset + t.numel, l.range(t.range).numel) << t.name;
    EXPECT_EQ(t.weight_decay, t.shape.size() == 2) << t.name;
    EXPECT_EQ(t.tied, t.name == "wte") << t.name;
    off += t.numel;
  }
  EXPECT_EQ(l.tensor("h.2.mlp.proj.weight").shape, (std::vector<std::size_t>{10, 40}));
  EXPECT_EQ(l.tensor("h.1.attn.qkv.bias").range, l.block_range(1));
  // Typed views agree with the table.
  std::vector<float> buf(l.total_numel());
  auto v = block_view(l, buf.data() + l.range(l.block_range(1)).offset);
  EXPECT_EQ(v.fc_w - buf.data(), static_cast<long>(l.tensor("h.1.mlp.fc.weight").offset));
  EXPECT_EQ(v.mlp_proj_b - buf.data(), static_cast<long>(l.tensor("h.1.mlp.proj.bias").offset));
  auto e = embedding_view(l, buf.data());
  EXPECT_EQ(e.wpe - buf.data(), static_cast<long>(l.tensor("wpe").offset));
}

TEST(ParameterLayout, DecaySegmentsOfAnySliceMatchPerElementFlags) {
  ParameterLayout l({.n_layer = 2, .n_embd = 6, .n_head = 3, .n_positions = 5, .vocab_size = 7});
  std::vector<bool> flag(l.total_numel());
  for (const auto& t : l.tensors())
    for (std::size_t i = 0; i < t.numel; ++i) flag[t.offset + i] = t.weight_decay;
  for (std::size_t off : {0ul, 1ul, 41ul, 42ul, 100ul, 300ul})
    for (std::size_t n : {0ul, 1ul, 5ul, 77ul, 400ul}) {
      if (off + n > l.total_numel()) continue;
      auto segs = decay_segments(l, off, n);
      std::size_t covered = 0;
      for (std::size_t k = 0; k < segs.size(); ++k) {
        EXPECT_EQ(segs[k].offset, covered);
        if (k > 0) {
          EXPECT_NE(segs[k].decay, segs[k - 1].decay) << "adjacent runs are merged";
        }
        for (std::size_t i = 0; i < segs[k].numel; ++i)
          ASSERT_EQ(segs[k].decay, flag[off + covered + i]) << off;
        covered += segs[k].numel;
      }
      EXPECT_EQ(covered, n);
    }
}

TEST(ParameterLayout, LargeModelsArePureSizes) {
  GptConfig c = GptConfig::load("gpt-neox-20b");
  ParameterLayout l(c);  // allocates no parameter memory
  const std::size_t C = 6144, L = 44, V = 50432;
  // GPT-NeoX: rotary positions (no wpe), an untied LM head; its blocks hold GPT-2's 12 C^2 + 13 C.
  EXPECT_EQ(l.total_numel(), 2 * V * C + L * (12 * C * C + 13 * C) + 2 * C);
  EXPECT_EQ(l.total_numel(), 20554567680u);  // as published
  EXPECT_GT(l.total_numel(), std::size_t{1} << 34);
  EXPECT_EQ(l.max_range_numel(), 12 * C * C + 13 * C);
  EXPECT_EQ(forward_acquire_order(c).size(), L + 3);  // embeddings, blocks, ln_f, lm_head
  EXPECT_EQ(ParameterLayout(GptConfig::load("gpt2")).total_numel(), 124439808u);  // GPT-2 124M (tied head)
}

TEST(Flops, FormulaMatchesHandCount) {
  GptConfig c{.n_layer = 6, .n_embd = 384, .n_head = 6, .n_positions = 256, .vocab_size = 256};
  // forward per token: 24 L C^2 (linears) + 4 L T C (attention) + 2 V C (head); x3 for the step.
  const double fwd = 24.0 * 6 * 384 * 384 + 4.0 * 6 * 256 * 384 + 2.0 * 256 * 384;
  EXPECT_DOUBLE_EQ(training_step_flops(c, 8, 256), 3 * fwd * 8 * 256);
}

// Records every ParamSource call of a real model run, on top of resident buffers.
class RecordingParams : public ParamSource {
 public:
  RecordingParams(const ParameterLayout& l, const float* p, float* g) : inner_(l, p, g) {}
  AcquiredParams acquire_params(int r) override {
    EXPECT_EQ(held_, -1) << "at most one range acquired at a time";
    held_ = r;
    events.push_back({RangeEvent::Kind::acquire, r});
    return inner_.acquire_params(r);
  }
  void release_params(int r) override {
    EXPECT_EQ(held_, r);
    held_ = -1;
    events.push_back({RangeEvent::Kind::release, r});
  }
  float* grad_buffer(int r) override { return inner_.grad_buffer(r); }
  void grads_ready(int r) override { events.push_back({RangeEvent::Kind::grads_ready, r}); }
  std::vector<RangeEvent> events;

 private:
  ResidentParams inner_;
  int held_ = -1;
};

TEST(RangeSchedule, ModelKeepsTheDocumentedOrder) {
  GptConfig c{.n_layer = 3, .n_embd = 12, .n_head = 2, .n_positions = 8, .vocab_size = 17};
  for (bool recompute : {false, true}) {
    Gpt model(c, 2, 5, {.recompute = recompute});
    std::vector<float> p(model.layout().total_numel()), g(p.size(), 0.0f);
    gpt2_init(p.data(), model.layout(), 1);
    std::vector<std::int32_t> tok(10, 3), tgt(10, 4);
    RecordingParams rec(model.layout(), p.data(), g.data());
    model.forward(rec, tok.data(), tgt.data());
    EXPECT_EQ(rec.events, forward_range_events(c));
    rec.events.clear();
    model.backward(rec);
    EXPECT_EQ(rec.events, backward_range_events(c));
  }
  EXPECT_EQ(forward_acquire_order(c), (std::vector<int>{0, 1, 2, 3, 4, 0}));
  EXPECT_EQ(backward_acquire_order(c), (std::vector<int>{0, 4, 3, 2, 1}));
  EXPECT_EQ(grads_ready_order(c), (std::vector<int>{4, 3, 2, 1, 0}));
}

TEST(GptInit, SeededSliceableAndScaledAsGpt2) {
  GptConfig c{.n_layer = 4, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 97};
  ParameterLayout l(c);
  std::vector<float> a(l.total_numel()), b(l.total_numel()), other(l.total_numel());
  gpt2_init(a.data(), l, 42);
  gpt2_init(b.data(), l, 42);
  gpt2_init(other.data(), l, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  std::vector<float> slice(1000);
  gpt2_init_slice(slice.data(), l, 42, 12345, slice.size());
  EXPECT_TRUE(std::equal(slice.begin(), slice.end(), a.begin() + 12345));
  auto stddev = [&](const std::string& name) {
    const auto& t = l.tensor(name);
    double s = 0;
    for (std::size_t i = 0; i < t.numel; ++i) s += double(a[t.offset + i]) * a[t.offset + i];
    return std::sqrt(s / t.numel);
  };
  EXPECT_NEAR(stddev("wte"), 0.02, 0.001);
  EXPECT_NEAR(stddev("h.1.mlp.fc.weight"), 0.02, 0.001);
  EXPECT_NEAR(stddev("h.1.mlp.proj.weight"), 0.02 / std::sqrt(8.0), 0.0005);
  EXPECT_EQ(stddev("h.0.attn.qkv.bias"), 0.0);
  EXPECT_EQ(a[l.tensor("ln_f.weight").offset], 1.0f);
}

}  // namespace
}  // namespace tz
