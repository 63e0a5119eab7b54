// Inference with the key/value cache against full recomputation: at every position the logits of one
// cached step equal those of Gpt::forward over the whole prefix, one position is computed per token
// (never the prefix again), reset starts over; and sampling: greedy is the argmax, top-k 1 is greedy,
// a seed fixes the output, the draws follow the softmax.
#include "model/gpt_decode.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "model/gpt_init.hpp"
#include "model/sampling.hpp"
#include "test_util.hpp"

namespace tz {
namespace {

constexpr double kDecodeVsFull = 2e-5;  // normalized error: same math, N = 1 rows vs (T, ...) batches

const GptConfig kDecodeCfg{.n_layer = 2, .n_embd = 24, .n_head = 3, .n_positions = 16, .vocab_size = 61};

template <typename F>
void expect_throw_input(F&& f) {
  EXPECT_THROW(f(), InputError);
}

struct Model {
  ParameterLayout layout;
  std::vector<float> params;
  explicit Model(const GptConfig& config = kDecodeCfg) : layout(config) {
    params.resize(layout.total_numel());
    gpt2_init(params.data(), layout, 11);
    auto noise = test::randn(params.size(), 4, 0.05f);  // LayerNorms off their identity start
    for (std::size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  }
};

TEST(GptDecode, EveryPositionEqualsFullRecomputation) {
  Model m;
  GptDecoder dec(m.layout, m.params.data());
  std::vector<std::int32_t> tokens;
  for (int t = 0; t < kDecodeCfg.n_positions; ++t) tokens.push_back((t * 17 + 5) % kDecodeCfg.vocab_size);
  for (int t = 0; t < kDecodeCfg.n_positions; ++t) {
    const float* got = dec.step(tokens[t]);
    const std::vector<float> want =
        decode_logits_ref(m.layout, m.params.data(), {tokens.data(), std::size_t(t + 1)});
    EXPECT_LT(test::norm_err(got, want.data(), want.size()), kDecodeVsFull) << "position " << t;
  }
  EXPECT_EQ(dec.positions_computed(), kDecodeCfg.n_positions);  // one per token, never the prefix again
  expect_throw_input([&] { dec.step(0); });
  dec.reset();
  const float* again = dec.step(tokens[0]);
  const auto first = decode_logits_ref(m.layout, m.params.data(), {tokens.data(), 1});
  EXPECT_LT(test::norm_err(again, first.data(), first.size()), kDecodeVsFull);
}

// The other families: a Llama (grouped-query 3:1, so the cache holds one key/value head; RMSNorm,
// SwiGLU, untied) and a GPT-NeoX (rotary on a quarter of each head, parallel residual, exact GELU).
TEST(GptDecode, LlamaAndNeoxEveryPositionEqualsFullRecomputation) {
  GptConfig llama = kDecodeCfg;
  llama.family = ModelFamily::llama;
  llama.norm = NormKind::rmsnorm;
  llama.norm_bias = false;
  llama.positions = PositionKind::rotary;
  llama.n_kv_head = 1;
  llama.qkv_bias = llama.attn_out_bias = llama.mlp_bias = false;
  llama.mlp = MlpKind::swiglu;
  llama.mlp_hidden = 40;
  llama.tied_embeddings = false;
  GptConfig neox = kDecodeCfg;
  neox.family = ModelFamily::gpt_neox;
  neox.positions = PositionKind::rotary;
  neox.rotary_fraction = 0.25;
  neox.mlp = MlpKind::gelu_exact;
  neox.residual = ResidualKind::parallel;
  neox.tied_embeddings = false;
  for (const GptConfig& c : {llama, neox}) {
    Model m(c);
    GptDecoder dec(m.layout, m.params.data());
    std::vector<std::int32_t> tokens;
    for (int t = 0; t < c.n_positions; ++t) tokens.push_back((t * 17 + 5) % c.vocab_size);
    for (int t = 0; t < c.n_positions; ++t) {
      const float* got = dec.step(tokens[t]);
      const std::vector<float> want =
          decode_logits_ref(m.layout, m.params.data(), {tokens.data(), std::size_t(t + 1)});
      EXPECT_LT(test::norm_err(got, want.data(), want.size()), kDecodeVsFull)
          << model_family_name(c.family) << " position " << t;
    }
  }
}

TEST(GptDecode, ThreadsChangeNothing) {
  Model m;
  GptDecoder one(m.layout, m.params.data(), 1), two(m.layout, m.params.data(), 2);
  for (int t = 0; t < 8; ++t) {
    const float* a = one.step(t + 3);
    const float* b = two.step(t + 3);
    EXPECT_LT(test::norm_err(a, b, kDecodeCfg.vocab_size), 1e-6);
  }
}

TEST(Sampling, GreedyTopKAndSeeds) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 0.5f};
  EXPECT_EQ(sample_token(logits, {.temperature = 0}, 0), 1);  // lowest id among equal maxima
  for (std::uint64_t d = 0; d < 20; ++d)
    EXPECT_EQ(sample_token(logits, {.temperature = 1.5, .top_k = 1}, d), 1);
  for (std::uint64_t d = 0; d < 50; ++d) {
    const int t = sample_token(logits, {.temperature = 1.0, .top_k = 3}, d);
    EXPECT_TRUE(t == 1 || t == 3 || t == 4) << t;  // the three most likely
  }
  // Frequencies follow softmax(logits / T): 20000 counter draws (deterministic), 4 sigma tolerance.
  const double T = 0.7;
  std::map<int, int> hits;
  const int n = 20000;
  for (int d = 0; d < n; ++d) ++hits[sample_token(logits, {.temperature = T, .seed = 9}, std::uint64_t(d))];
  double z = 0;
  for (float l : logits) z += std::exp(l / T);
  for (int i = 0; i < 5; ++i) {
    const double p = std::exp(logits[i] / T) / z;
    EXPECT_NEAR(double(hits[i]) / n, p, 4 * std::sqrt(p * (1 - p) / n) + 1e-4) << "token " << i;
  }
}

TEST(Sampling, GenerateIsDeterministicForASeed) {
  Model m;
  GptDecoder dec(m.layout, m.params.data());
  const std::vector<std::int32_t> prompt = {3, 14, 15};
  const auto a = generate(dec, prompt, 10, {.temperature = 1.0, .seed = 5});
  const auto b = generate(dec, prompt, 10, {.temperature = 1.0, .seed = 5});
  const auto c = generate(dec, prompt, 10, {.temperature = 1.0, .seed = 6});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(dec.positions_computed(),
            3 * (3 + 9));  // each run: the prompt, then one per new token but the last
  // Greedy generation equals the argmax of full recomputation, token by token.
  const auto g = generate(dec, prompt, 6, {.temperature = 0});
  std::vector<std::int32_t> seq = prompt;
  for (std::int32_t next : g) {
    const auto logits = decode_logits_ref(m.layout, m.params.data(), seq);
    EXPECT_EQ(next, std::max_element(logits.begin(), logits.end()) - logits.begin());
    seq.push_back(next);
  }
  expect_throw_input([&] { generate(dec, prompt, 14, {}); });  // 3 + 14 > 16 positions
}

}  // namespace
}  // namespace tz
