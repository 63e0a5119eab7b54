// Each fast layer against its _ref twin (normalized error under kFastVsRef), and each _ref backward
// against central finite differences of a random linear functional of the forward output.
#include "device/cpu/layers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/error.hpp"
#include "device/cpu/simd.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"

namespace tz {
namespace {

using test::norm_err;
using test::randn;

constexpr double kFastVsRef = 2e-5;         // fp32 kernels that sum in another order / use a polynomial exp
constexpr double kFiniteDifference = 2e-2;  // fp32 central differences, step 1e-2 (relative error)

// dot(out, proj) as a function of input buffer `x`; checks analytic gradient `g` at a few indices.
void check_fd(std::vector<float>& x, const std::vector<float>& g, const std::function<double()>& f,
              const char* what, int samples = 24) {
  std::mt19937 gen(7);
  double num = 0, den = 0;
  for (int s = 0; s < samples; ++s) {
    std::size_t i = gen() % x.size();
    const float saved = x[i], h = 1e-2f;
    x[i] = saved + h;
    double fp = f();
    x[i] = saved - h;
    double fm = f();
    x[i] = saved;
    double fd = (fp - fm) / (2.0 * h);
    num += (fd - g[i]) * (fd - g[i]);
    den += fd * fd;
  }
  EXPECT_LT(std::sqrt(num / std::max(den, 1e-20)), kFiniteDifference) << what;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

class Layers : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_kernel_threads(GetParam()); }
  void TearDown() override { set_kernel_threads(1); }
};

TEST_P(Layers, LayerNormFastMatchesRefAndFiniteDifferences) {
  const int N = 37, C = 45;
  auto x = randn(N * C, 1), w = randn(C, 2), b = randn(C, 3), dy = randn(N * C, 4);
  std::vector<float> y(N * C), y_ref(N * C), m(N), r(N), m_ref(N), r_ref(N);
  layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  layernorm_forward_ref(y_ref.data(), m_ref.data(), r_ref.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  EXPECT_LT(norm_err(y, y_ref), kFastVsRef);
  std::vector<float> dx(N * C, 0.5f), dw(C, 0.25f), db(C, 0.125f), dx_ref = dx, dw_ref = dw, db_ref = db;
  layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), m.data(), r.data(), N,
                     C);
  layernorm_backward_ref(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(),
                         m_ref.data(), r_ref.data(), N, C);
  EXPECT_LT(norm_err(dx, dx_ref), kFastVsRef);
  EXPECT_LT(norm_err(dw, dw_ref), kFastVsRef);
  EXPECT_LT(norm_err(db, db_ref), kFastVsRef);

  std::vector<float> gx(N * C, 0), gw(C, 0), gb(C, 0);
  layernorm_backward_ref(gx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), m_ref.data(),
                         r_ref.data(), N, C);
  auto f = [&] {
    layernorm_forward_ref(y_ref.data(), m_ref.data(), r_ref.data(), x.data(), w.data(), b.data(), N, C,
                          1e-5f);
    return dot(y_ref, dy);
  };
  check_fd(x, gx, f, "layernorm dx");
  check_fd(w, gw, f, "layernorm dw");
  check_fd(b, gb, f, "layernorm db");
}

TEST_P(Layers, MatmulFastMatchesRefAndFiniteDifferences) {
  const int N = 29, C = 19, OC = 23;
  auto x = randn(N * C, 1), w = randn(OC * C, 2), b = randn(OC, 3), dy = randn(N * OC, 4);
  std::vector<float> y(N * OC), y_ref(N * OC);
  matmul_forward(y.data(), x.data(), w.data(), b.data(), N, C, OC);
  matmul_forward_ref(y_ref.data(), x.data(), w.data(), b.data(), N, C, OC);
  EXPECT_LT(norm_err(y, y_ref), kFastVsRef);
  matmul_forward(y.data(), x.data(), w.data(), nullptr, N, C, OC);
  matmul_forward_ref(y_ref.data(), x.data(), w.data(), nullptr, N, C, OC);
  EXPECT_LT(norm_err(y, y_ref), kFastVsRef);
  std::vector<float> dx(N * C), dw(OC * C, 1.0f), db(OC, 1.0f), dx_ref(N * C), dw_ref = dw, db_ref = db;
  matmul_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, OC);
  matmul_backward_ref(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(), N, C, OC);
  EXPECT_LT(norm_err(dx, dx_ref), kFastVsRef);
  EXPECT_LT(norm_err(dw, dw_ref), kFastVsRef);
  EXPECT_LT(norm_err(db, db_ref), kFastVsRef);

  std::vector<float> gx(N * C), gw(OC * C, 0), gb(OC, 0);
  matmul_backward_ref(gx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), N, C, OC);
  auto f = [&] {
    matmul_forward_ref(y_ref.data(), x.data(), w.data(), b.data(), N, C, OC);
    return dot(y_ref, dy);
  };
  check_fd(x, gx, f, "matmul dx");
  check_fd(w, gw, f, "matmul dw");
  check_fd(b, gb, f, "matmul db");
}

TEST_P(Layers, GeluFastMatchesRefAndFiniteDifferences) {
  const long n = 100003;
  auto x = randn(n, 1, 3.0f), dy = randn(n, 2);
  std::vector<float> y(n), y_ref(n), dx(n), dx_ref(n);
  gelu_forward(y.data(), x.data(), n);
  gelu_forward_ref(y_ref.data(), x.data(), n);
  EXPECT_LT(norm_err(y, y_ref), kFastVsRef);
  gelu_backward(dx.data(), x.data(), dy.data(), n);
  gelu_backward_ref(dx_ref.data(), x.data(), dy.data(), n);
  EXPECT_LT(norm_err(dx, dx_ref), kFastVsRef);
  std::vector<float> xs(x.begin(), x.begin() + 257), ys(257), dys(dy.begin(), dy.begin() + 257), gs(257);
  gelu_backward_ref(gs.data(), xs.data(), dys.data(), 257);
  check_fd(
      xs, gs,
      [&] {
        gelu_forward_ref(ys.data(), xs.data(), 257);
        return dot(ys, dys);
      },
      "gelu dx");
}

TEST_P(Layers, SoftmaxCrossEntropyFastMatchesRefAndFiniteDifferences) {
  const int N = 21, V = 61;
  auto logits = randn(N * V, 1, 2.0f);
  std::vector<std::int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 17) % V;
  std::vector<float> l(N), l_ref(N), p(N * V), p_ref(N * V), d(N * V), d_ref(N * V);
  double loss = softmax_cross_entropy_forward(l.data(), p.data(), logits.data(), targets.data(), N, V);
  double loss_ref =
      softmax_cross_entropy_forward_ref(l_ref.data(), p_ref.data(), logits.data(), targets.data(), N, V);
  EXPECT_NEAR(loss, loss_ref, 1e-5 * loss_ref);
  EXPECT_LT(norm_err(p, p_ref), kFastVsRef);
  softmax_cross_entropy_backward(d.data(), p.data(), targets.data(), 1.0f / N, N, V);
  softmax_cross_entropy_backward_ref(d_ref.data(), p_ref.data(), targets.data(), 1.0f / N, N, V);
  EXPECT_LT(norm_err(d, d_ref), kFastVsRef);
  check_fd(
      logits, d_ref,
      [&] {
        return softmax_cross_entropy_forward_ref(l_ref.data(), p_ref.data(), logits.data(), targets.data(), N,
                                                 V);
      },
      "cross-entropy dlogits");
}

TEST_P(Layers, EncoderForwardAndBackwardScatter) {
  const int B = 2, T = 5, C = 7, V = 11;
  auto wte = randn(V * C, 1), wpe = randn(T * C, 2), dy = randn(B * T * C, 3);
  std::vector<std::int32_t> tok = {3, 3, 0, 10, 3, 1, 2, 3, 10, 0};
  std::vector<float> y(B * T * C);
  encoder_forward(y.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
  for (int i = 0; i < B * T; ++i)
    for (int c = 0; c < C; ++c) ASSERT_FLOAT_EQ(y[i * C + c], wte[tok[i] * C + c] + wpe[(i % T) * C + c]);
  std::vector<float> gte(V * C, 0), gpe(T * C, 0);
  encoder_backward(gte.data(), gpe.data(), dy.data(), tok.data(), B, T, C);
  check_fd(
      wte, gte,
      [&] {
        encoder_forward(y.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
        return dot(y, dy);
      },
      "encoder dwte", 40);
  check_fd(
      wpe, gpe,
      [&] {
        encoder_forward(y.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
        return dot(y, dy);
      },
      "encoder dwpe", 20);
}

INSTANTIATE_TEST_SUITE_P(Threads, Layers, ::testing::Values(1, 2));

// GELU's 16-wide body (AVX-512F) gives the 8-wide body's bits, for every length's tail; both are
// within kFastVsRef of the _ref. Widths this CPU cannot run are refused by name (and skipped here).
TEST(GeluWidths, SixteenWideEqualsEightWideBitForBitAndBothMatchRef) {
  if (!simd::have_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA: only the _ref runs";
  for (long n : {1L, 7L, 8L, 15L, 16L, 17L, 31L, 33L, 1000L, 4099L}) {
    const auto x = randn(n, 3, 3.0f), dy = randn(n, 4);
    std::vector<float> y8(n), dx8(n), y_ref(n), dx_ref(n);
    gelu_forward_width(y8.data(), x.data(), n, 8);
    gelu_backward_width(dx8.data(), x.data(), dy.data(), n, 8);
    gelu_forward_ref(y_ref.data(), x.data(), n);
    gelu_backward_ref(dx_ref.data(), x.data(), dy.data(), n);
    EXPECT_LT(norm_err(y8, y_ref), kFastVsRef) << n;
    EXPECT_LT(norm_err(dx8, dx_ref), kFastVsRef) << n;
    if (!simd::have_avx512f()) continue;
    std::vector<float> y16(n), dx16(n);
    gelu_forward_width(y16.data(), x.data(), n, 16);
    gelu_backward_width(dx16.data(), x.data(), dy.data(), n, 16);
    EXPECT_EQ(std::memcmp(y16.data(), y8.data(), n * sizeof(float)), 0) << n;
    EXPECT_EQ(std::memcmp(dx16.data(), dx8.data(), n * sizeof(float)), 0) << n;
  }
  std::vector<float> one(1);
  EXPECT_THROW(gelu_forward_width(one.data(), one.data(), 1, 4), InputError);
  if (!simd::have_avx512f()) {
    EXPECT_THROW(gelu_forward_width(one.data(), one.data(), 1, 16), InputError);
    GTEST_SKIP() << "no AVX-512F: the 16-wide body was not compared";
  }
}

}  // namespace
}  // namespace tz
