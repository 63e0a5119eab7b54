// Causal attention with grouped-query heads (device/cpu/attention.cpp): the tiled fast path against the
// materialised _ref (out, lse, dqkv), the _ref backward against central finite differences, the decode
// step against a row of the forward, grouped-query attention against multi-head attention on the
// key/value heads repeated (Hugging Face's repeat_kv), and a KV that does not divide H refused.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"
#include "support/gemm_isa_test.hpp"

namespace tz {
namespace {

using test::norm_err;
using test::randn;

constexpr double kAttnFastVsRef = 2e-5;   // fp32, sums in another order, a polynomial exp
constexpr double kAttnFiniteDiff = 2e-2;  // fp32 central differences, step 1e-2 (relative error)

// Odd shapes: T not a multiple of the 64-row query tile (and below it), T above the 256-key block (two
// and three blocks, so the online softmax rescales), head sizes 5, 7, 8, 12, 16 (not all multiples of
// the vector width), groups of 4, 3, 2 and 1 (multi-head) query heads per key/value head.
struct GqaShape {
  int B, T, H, KV, D;
};

const GqaShape kGqaShapes[] = {
    {2, 13, 3, 3, 5},    // multi-head
    {2, 13, 3, 1, 5},    // one key/value head for 3 query heads
    {1, 70, 4, 1, 8},    // 4:1
    {2, 19, 6, 3, 7},    // 2:1, odd head counts
    {1, 130, 8, 2, 12},  // 4:1
    {1, 300, 6, 3, 8},   // 2:1, two key blocks
    {1, 577, 4, 2, 16},  // 2:1, three key blocks
};

std::size_t qkv_width(const GqaShape& s) {
  return static_cast<std::size_t>(s.H + 2 * s.KV) * s.D;
}

double attn_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += double(a[i]) * b[i];
  return sum;
}

// lse[b,h,t] = log sum_{s<=t} exp(q_t . k_s / sqrt(D)) with h's key/value head, in double.
std::vector<double> gqa_lse_ref(const std::vector<float>& qkv, const GqaShape& g) {
  const std::size_t ld = qkv_width(g);
  std::vector<double> lse(static_cast<std::size_t>(g.B) * g.H * g.T);
  for (int b = 0; b < g.B; ++b)
    for (int h = 0; h < g.H; ++h) {
      const std::size_t kcol = static_cast<std::size_t>(g.H + h / (g.H / g.KV)) * g.D;
      for (int t = 0; t < g.T; ++t) {
        std::vector<double> s(t + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double qk = 0;
          for (int i = 0; i < g.D; ++i)
            qk += double(qkv[(std::size_t(b) * g.T + t) * ld + h * g.D + i]) *
                  qkv[(std::size_t(b) * g.T + j) * ld + kcol + i];
          s[j] = qk / std::sqrt(double(g.D));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double x : s) sum += std::exp(x - mx);
        lse[(std::size_t(b) * g.H + h) * g.T + t] = mx + std::log(sum);
      }
    }
  return lse;
}

// dot(out, proj) as a function of x; checks the analytic gradient g at `samples` random indices.
void attn_check_fd(std::vector<float>& x, const std::vector<float>& g, const std::function<double()>& f,
                   const std::string& what, int samples) {
  std::mt19937 gen(11);
  double num = 0, den = 0;
  for (int s = 0; s < samples; ++s) {
    const std::size_t i = gen() % x.size();
    const float saved = x[i], h = 1e-2f;
    x[i] = saved + h;
    const double fp = f();
    x[i] = saved - h;
    const double fm = f();
    x[i] = saved;
    const double fd = (fp - fm) / (2.0 * h);
    num += (fd - g[i]) * (fd - g[i]);
    den += fd * fd;
  }
  EXPECT_LT(std::sqrt(num / std::max(den, 1e-20)), kAttnFiniteDiff) << what;
}

class GqaAttention : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_kernel_threads(GetParam()); }
  void TearDown() override { set_kernel_threads(1); }
};

std::string shape_name(const GqaShape& s) {
  return "B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " H " + std::to_string(s.H) + " KV " +
         std::to_string(s.KV) + " D " + std::to_string(s.D);
}

// The tiled forward and backward of shape s against the materialised _ref (and the lse against a double
// reference); the _ref backward against finite differences where T is small.
void expect_tiled_matches_ref(const GqaShape& s) {
  const int B = s.B, T = s.T, H = s.H, KV = s.KV, D = s.D;
  const std::string what = shape_name(s);
  const std::size_t N = std::size_t(B) * T, Q = N * qkv_width(s), O = N * H * D;
  auto qkv = randn(Q, 1), dy = randn(O, 2);
  std::vector<float> y(O, 7.0f), y_ref(O), lse(std::size_t(B) * H * T, 7.0f),
      att_ref(std::size_t(B) * H * T * T);
  attention_forward(y.data(), lse.data(), qkv.data(), B, T, H, KV, D);
  attention_forward_ref(y_ref.data(), att_ref.data(), qkv.data(), B, T, H, KV, D);
  EXPECT_LT(norm_err(y, y_ref), kAttnFastVsRef) << what;
  const std::vector<double> lse_ref = gqa_lse_ref(qkv, s);
  for (std::size_t i = 0; i < lse.size(); ++i)
    ASSERT_NEAR(lse[i], lse_ref[i], 1e-5 * (1 + std::abs(lse_ref[i]))) << what << " row " << i;
  std::vector<float> dqkv(Q, 9.0f), dqkv_ref(Q);
  attention_backward(dqkv.data(), dy.data(), qkv.data(), y.data(), lse.data(), B, T, H, KV, D);
  attention_backward_ref(dqkv_ref.data(), dy.data(), qkv.data(), att_ref.data(), B, T, H, KV, D);
  EXPECT_LT(norm_err(dqkv, dqkv_ref), kAttnFastVsRef) << what;
  if (T > 20) return;
  auto f = [&] {
    attention_forward_ref(y_ref.data(), att_ref.data(), qkv.data(), B, T, H, KV, D);
    return attn_dot(y_ref, dy);
  };
  f();
  attention_backward_ref(dqkv_ref.data(), dy.data(), qkv.data(), att_ref.data(), B, T, H, KV, D);
  attn_check_fd(qkv, dqkv_ref, f, "attention dqkv " + what, 64);
}

TEST_P(GqaAttention, TiledMatchesMaterialisedRefAndFiniteDifferences) {
  for (const GqaShape& s : kGqaShapes) expect_tiled_matches_ref(s);
}

// Grouped-query attention is multi-head attention on k, v repeated to the query heads: out and lse
// equal, dq equal, and each key/value head's dk (dv) is the sum of its group's repeated-head gradients.
TEST_P(GqaAttention, EqualsMultiHeadAttentionOnRepeatedKeyValueHeads) {
  const int B = 2, T = 75, H = 6, KV = 2, D = 9, G = H / KV;
  const std::size_t N = std::size_t(B) * T, Wg = std::size_t(H + 2 * KV) * D, Wm = std::size_t(3 * H) * D;
  auto qkv = randn(N * Wg, 5), dy = randn(N * H * D, 6);
  std::vector<float> mha(N * Wm);
  for (std::size_t r = 0; r < N; ++r)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D; ++i) {
        const int kv = h / G;
        mha[r * Wm + h * D + i] = qkv[r * Wg + h * D + i];
        mha[r * Wm + (H + h) * D + i] = qkv[r * Wg + (H + kv) * D + i];
        mha[r * Wm + (2 * H + h) * D + i] = qkv[r * Wg + (H + KV + kv) * D + i];
      }
  std::vector<float> y(N * H * D), y_mha(N * H * D), lse(B * H * T), lse_mha(B * H * T);
  attention_forward(y.data(), lse.data(), qkv.data(), B, T, H, KV, D);
  attention_forward(y_mha.data(), lse_mha.data(), mha.data(), B, T, H, H, D);
  EXPECT_LT(norm_err(y, y_mha), 1e-6);
  EXPECT_LT(norm_err(lse, lse_mha), 1e-6);
  std::vector<float> d(N * Wg), d_mha(N * Wm), folded(N * Wg, 0.0f);
  attention_backward(d.data(), dy.data(), qkv.data(), y.data(), lse.data(), B, T, H, KV, D);
  attention_backward(d_mha.data(), dy.data(), mha.data(), y_mha.data(), lse_mha.data(), B, T, H, H, D);
  for (std::size_t r = 0; r < N; ++r)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D; ++i) {
        const int kv = h / G;
        folded[r * Wg + h * D + i] = d_mha[r * Wm + h * D + i];
        folded[r * Wg + (H + kv) * D + i] += d_mha[r * Wm + (H + h) * D + i];
        folded[r * Wg + (H + KV + kv) * D + i] += d_mha[r * Wm + (2 * H + h) * D + i];
      }
  EXPECT_LT(norm_err(d, folded), kAttnFastVsRef);
}

// Backward's result does not depend on the thread count (one task per key/value head and sequence).
TEST(GqaAttentionThreads, BackwardIsBitwiseTheSameOnOneAndTwoThreads) {
  const GqaShape s{3, 90, 8, 2, 12};
  const std::size_t N = std::size_t(s.B) * s.T, Q = N * qkv_width(s), O = N * s.H * s.D;
  auto qkv = randn(Q, 8), dy = randn(O, 9);
  std::vector<float> y(O), lse(std::size_t(s.B) * s.H * s.T), d1(Q), d2(Q);
  attention_forward(y.data(), lse.data(), qkv.data(), s.B, s.T, s.H, s.KV, s.D);
  set_kernel_threads(1);
  attention_backward(d1.data(), dy.data(), qkv.data(), y.data(), lse.data(), s.B, s.T, s.H, s.KV, s.D);
  set_kernel_threads(2);
  attention_backward(d2.data(), dy.data(), qkv.data(), y.data(), lse.data(), s.B, s.T, s.H, s.KV, s.D);
  set_kernel_threads(1);
  EXPECT_EQ(d1, d2);
}

// The decode step (one query against a KV cache of rows KV D floats) equals row pos of the materialised
// forward, for positions in the first key block, at its edge and beyond it.
void expect_decode_matches_ref(const GqaShape& s) {
  const int T = s.T, H = s.H, KV = s.KV, D = s.D;
  const std::size_t ld = qkv_width(s), C = std::size_t(H) * D, KVD = std::size_t(KV) * D;
  auto qkv = randn(T * ld, 3);
  std::vector<float> y_ref(T * C), att_ref(std::size_t(H) * T * T);
  attention_forward_ref(y_ref.data(), att_ref.data(), qkv.data(), 1, T, H, KV, D);
  std::vector<float> kc(T * KVD), vc(T * KVD);
  for (int t = 0; t < T; ++t)
    for (std::size_t i = 0; i < KVD; ++i) {
      kc[t * KVD + i] = qkv[t * ld + C + i];
      vc[t * KVD + i] = qkv[t * ld + C + KVD + i];
    }
  for (int pos : {0, 1, 63, 64, 255, 256, 299}) {
    if (pos >= T) continue;
    std::vector<float> out(C, 5.0f), want(y_ref.begin() + pos * C, y_ref.begin() + (pos + 1) * C);
    attention_decode(out.data(), qkv.data() + std::size_t(pos) * ld, kc.data(), vc.data(), pos, H, KV, D);
    EXPECT_LT(norm_err(out, want), kAttnFastVsRef) << shape_name(s) << " pos " << pos;
  }
}

TEST_P(GqaAttention, DecodeMatchesMaterialisedRef) {
  for (const GqaShape& s : {GqaShape{1, 300, 3, 3, 8}, GqaShape{1, 300, 6, 2, 7}, GqaShape{1, 300, 4, 1, 5}})
    expect_decode_matches_ref(s);
}

// The tiled kernels on every instruction set this CPU runs: the micro-kernel's register tile (4 x 16,
// 6 x 16, 12 x 32), so the causal skipping per tile and the query tile's rows, and the row passes' width
// change with it. Shapes whose T and D cross those tiles, the query tile and the key block.
using GqaAttentionIsas = test::GemmIsaTest;

TEST_P(GqaAttentionIsas, TiledMatchesMaterialisedRef) {
  for (const GqaShape& s : {GqaShape{2, 13, 3, 1, 5}, GqaShape{1, 61, 2, 2, 33}, GqaShape{1, 130, 4, 2, 64},
                            GqaShape{1, 300, 6, 3, 8}, GqaShape{1, 520, 2, 1, 17}})
    expect_tiled_matches_ref(s);
  expect_decode_matches_ref({1, 300, 4, 2, 33});
}

INSTANTIATE_TEST_SUITE_P(Isas, GqaAttentionIsas, test::kEveryGemmIsa, test::gemm_isa_case_name);

TEST(GqaAttentionInput, KeyValueHeadsThatDoNotDivideTheQueryHeadsAreRefused) {
  std::vector<float> qkv(4 * 64, 0.5f), out(64), lse(16), dqkv(4 * 64);
  EXPECT_THROW(attention_forward(out.data(), lse.data(), qkv.data(), 1, 2, 4, 3, 2), InputError);
  EXPECT_THROW(attention_forward(out.data(), lse.data(), qkv.data(), 1, 2, 4, 0, 2), InputError);
  EXPECT_THROW(attention_backward(dqkv.data(), out.data(), qkv.data(), out.data(), lse.data(), 1, 2, 3, 2, 2),
               InputError);
  EXPECT_THROW(attention_decode(out.data(), qkv.data(), qkv.data(), qkv.data(), 0, 4, 3, 2), InputError);
  try {
    attention_forward(out.data(), lse.data(), qkv.data(), 1, 2, 4, 3, 2);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("3 key/value heads"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, GqaAttention, ::testing::Values(1, 2));

}  // namespace
}  // namespace tz
