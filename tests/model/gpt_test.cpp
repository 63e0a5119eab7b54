// Whole-model checks: finite differences of the loss against backward for sampled parameters of
// every tensor, recomputation and thread count changing nothing, gradient accumulation, and a short
// training run whose loss falls.
#include "model/gpt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/bf16.hpp"
#include "model/gpt_init.hpp"
#include "test_util.hpp"
#include "train/trainer_single.hpp"

namespace tz {
namespace {

constexpr double kModelFiniteDifference = 3e-2;  // fp32 loss differences, step 1e-2 on sampled elements
constexpr double kSameMath = 1e-6;               // same kernels, different schedule

const GptConfig kGptCfg{.n_layer = 2, .n_embd = 24, .n_head = 3, .n_positions = 11, .vocab_size = 29};
constexpr int kB = 2, kT = 7;

struct Fixture {
  Gpt model;
  std::vector<float> params, grads;
  std::vector<std::int32_t> tokens, targets;
  explicit Fixture(GptOptions opt = {}) : model(kGptCfg, kB, kT, opt) {
    params.resize(model.layout().total_numel());
    grads.assign(params.size(), 0.0f);
    gpt2_init(params.data(), model.layout(), 3);
    // Larger random LayerNorm gains and biases so their gradients are not trivially tiny.
    auto noise = test::randn(params.size(), 9, 0.05f);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
    std::mt19937 gen(5);
    for (int i = 0; i < kB * kT; ++i) {
      tokens.push_back(gen() % kGptCfg.vocab_size);
      targets.push_back(gen() % kGptCfg.vocab_size);
    }
  }
  double loss() {
    ResidentParams src(model.layout(), params.data(), grads.data());
    return model.forward(src, tokens.data(), targets.data());
  }
  void grad() {
    std::fill(grads.begin(), grads.end(), 0.0f);
    ResidentParams src(model.layout(), params.data(), grads.data());
    model.forward(src, tokens.data(), targets.data());
    model.backward(src);
  }
};

TEST(Gpt, BackwardMatchesFiniteDifferencesForEveryTensor) {
  Fixture f;
  f.grad();
  std::mt19937 gen(11);
  for (const auto& t : f.model.layout().tensors()) {
    double num = 0, den = 0;
    for (int s = 0; s < 6; ++s) {
      std::size_t i = t.offset + gen() % t.numel;
      const float saved = f.params[i], h = 1e-2f;
      f.params[i] = saved + h;
      double lp = f.loss();
      f.params[i] = saved - h;
      double lm = f.loss();
      f.params[i] = saved;
      double fd = (lp - lm) / (2 * h);
      num += (fd - f.grads[i]) * (fd - f.grads[i]);
      den += fd * fd;
    }
    EXPECT_LT(std::sqrt(num / std::max(den, 1e-12)), kModelFiniteDifference) << t.name;
  }
}

TEST(Gpt, RecomputeAndThreadsGiveTheSameGradients) {
  Fixture base;
  base.grad();
  for (GptOptions opt :
       {GptOptions{.threads = 1, .recompute = true}, GptOptions{.threads = 2, .recompute = false},
        GptOptions{.threads = 2, .recompute = true}}) {
    Fixture f(opt);
    f.grad();
    EXPECT_LT(test::norm_err(f.grads, base.grads), kSameMath) << opt.threads << " " << opt.recompute;
    EXPECT_LT(f.model.activation_floats(), base.model.activation_floats() + (opt.recompute ? 0 : 1));
  }
}

// Loss and every gradient bit for bit at 1, 2 and 3 threads (no recomputation): every kernel sums
// each output in an order that does not depend on how work is split. A shape large enough that the
// products and attention split over the threads (128 rows, 4 heads x 4 sequences).
TEST(Gpt, ThreadCountChangesNoBit) {
  const GptConfig cfg{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 53};
  constexpr int B = 4, T = 32;
  std::vector<float> first_grads;
  double first_loss = 0;
  for (int threads : {1, 2, 3}) {
    Gpt model(cfg, B, T, GptOptions{.threads = threads});
    std::vector<float> params(model.layout().total_numel()), grads(params.size(), 0.0f);
    gpt2_init(params.data(), model.layout(), 7);
    std::mt19937 gen(13);
    std::vector<std::int32_t> tokens, targets;
    for (int i = 0; i < B * T; ++i) {
      tokens.push_back(gen() % cfg.vocab_size);
      targets.push_back(gen() % cfg.vocab_size);
    }
    ResidentParams src(model.layout(), params.data(), grads.data());
    const double loss = model.forward(src, tokens.data(), targets.data());
    model.backward(src);
    if (threads == 1) {
      first_loss = loss;
      first_grads = grads;
      continue;
    }
    EXPECT_EQ(loss, first_loss) << threads << " threads";
    for (const auto& t : model.layout().tensors())  // name the tensors whose gradient differs
      EXPECT_TRUE(std::equal(grads.begin() + t.offset, grads.begin() + t.offset + t.numel,
                             first_grads.begin() + t.offset))
          << t.name << ", " << threads << " threads";
  }
}

// A source that serves each range as the sharded engine does in bf16 mode: the whole range in bf16,
// and in fp32 only the tensors that are not weight matrices; the fp32 copy of every weight matrix is
// NaN, so a read of it instead of the bf16 copy shows in the loss.
class Bf16Params final : public ParamSource {
 public:
  Bf16Params(const ParameterLayout& l, const std::vector<float>& widened, float* grads)
      : layout_(l), b16_(widened.size()), f32_(widened.size(), std::nanf("")), grads_(grads) {
    for (std::size_t i = 0; i < widened.size(); ++i) b16_[i] = to_bf16(widened[i]);
    for (const auto& t : l.tensors())
      if (!t.weight_matrix) std::copy_n(widened.begin() + t.offset, t.numel, f32_.begin() + t.offset);
  }
  AcquiredParams acquire_params(int r) override {
    const std::size_t at = layout_.range(r).offset;
    return {f32_.data() + at, b16_.data() + at};
  }
  void release_params(int) override {}
  float* grad_buffer(int r) override { return grads_ + layout_.range(r).offset; }
  void grads_ready(int) override {}

 private:
  const ParameterLayout& layout_;
  std::vector<bf16> b16_;
  std::vector<float> f32_;
  float* grads_;
};

// Weight matrices read from bf16 (widened inside the products and the embedding lookup) give the
// loss, logits and every gradient bit for bit as the same values held in fp32, with and without
// recomputation.
TEST(Gpt, Bf16WeightMatricesEqualTheirWidenedFp32Bitwise) {
  for (bool recompute : {false, true}) {
    Fixture f(GptOptions{.recompute = recompute});
    for (auto& p : f.params) p = to_float(to_bf16(p));  // values bf16 holds exactly
    f.grad();
    const double loss = f.loss();
    const std::vector<float> logits = f.model.logits();
    ASSERT_EQ(logits.size(), static_cast<std::size_t>(kB * kT * kGptCfg.vocab_size));
    std::vector<float> grads(f.params.size(), 0.0f);
    Bf16Params src(f.model.layout(), f.params, grads.data());
    EXPECT_EQ(f.model.forward(src, f.tokens.data(), f.targets.data()), loss) << "recompute " << recompute;
    EXPECT_EQ(logits, f.model.logits()) << "recompute " << recompute;
    f.model.backward(src);
    for (const auto& t : f.model.layout().tensors())
      EXPECT_TRUE(std::equal(grads.begin() + t.offset, grads.begin() + t.offset + t.numel,
                             f.grads.begin() + t.offset))
          << t.name << ", recompute " << recompute;
  }
}

TEST(ParameterLayout, WeightMatricesAreWteAndTheLinearWeights) {
  const ParameterLayout l(kGptCfg);
  for (const auto& t : l.tensors()) {
    const bool linear = t.name.ends_with(".weight") && t.shape.size() == 2;
    EXPECT_EQ(t.weight_matrix, t.name == "wte" || linear) << t.name;
  }
}

TEST(Gpt, BackwardAccumulatesWithGradScale) {
  Fixture f;
  f.grad();
  std::vector<float> once = f.grads;
  ResidentParams src(f.model.layout(), f.params.data(), f.grads.data());
  f.model.forward(src, f.tokens.data(), f.targets.data());
  f.model.backward(src, 0.5f);  // grads = once + 0.5 once
  for (auto& g : once) g *= 1.5f;
  EXPECT_LT(test::norm_err(f.grads, once), kSameMath);
}

TEST(Gpt, InitialLossIsNearUniformAndTrainingLowersIt) {
  std::vector<std::int32_t> text;
  for (int i = 0; i < 4000; ++i) text.push_back((i * 7 + i / 13) % 29);  // a learnable pattern
  TrainOptions opt;
  opt.batch = 4;
  opt.seq = 8;
  opt.schedule = {.max_lr = 1e-2f, .min_lr = 1e-3f, .warmup_steps = 5, .decay_steps = 60};
  auto steps = train_single(kGptCfg, text, 60, opt);
  EXPECT_NEAR(steps.front().loss, std::log(29.0), 0.1);
  EXPECT_LT(steps.back().loss, 0.5 * steps.front().loss);
  for (const auto& s : steps) EXPECT_TRUE(std::isfinite(s.grad_norm));
}

}  // namespace
}  // namespace tz
