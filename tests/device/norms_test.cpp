// The norms of the model families: LayerNorm with a given eps and without bias (GPT-NeoX's eps,
// bias-free LayerNorms), and RMSNorm (Llama). Each fast path against its _ref twin, each _ref against
// the formula evaluated in double (so eps is proved to enter where it should), each _ref backward
// against central finite differences, the fast backward the same for 1 and 2 kernel threads (bitwise),
// and the cpu and emulated kernel tables bitwise the CPU path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/cpu/layers.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"

namespace tz {
namespace {

using test::norm_err;
using test::randn;

constexpr double kNormsFastVsRef = 2e-5;   // fp32 sums in another order
constexpr double kNormsVsDouble = 2e-6;    // fp32 against the same formula in double
constexpr double kNormsFiniteDiff = 2e-2;  // fp32 central differences, step 1e-2 (relative error)

// Relative error of the gradient g against central differences of f at a few entries of x.
double norms_fd_error(std::vector<float>& x, const std::vector<float>& g, const std::function<double()>& f) {
  std::mt19937 gen(11);
  double num = 0, den = 0;
  for (int s = 0; s < 24; ++s) {
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
  return std::sqrt(num / std::max(den, 1e-20));
}

double norms_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

bool norms_bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// LayerNorm in double: out and rstd for each row.
std::vector<double> layernorm_double(const std::vector<float>& x, const std::vector<float>& w, const float* b,
                                     int N, int C, double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < N; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += x[r * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[r * C + c] - m) * (x[r * C + c] - m);
    const double rs = 1.0 / std::sqrt(v / C + eps);
    for (int c = 0; c < C; ++c) y[r * C + c] = (x[r * C + c] - m) * rs * w[c] + (b ? b[c] : 0.0);
  }
  return y;
}

std::vector<double> rmsnorm_double(const std::vector<float>& x, const std::vector<float>& w, int N, int C,
                                   double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < N; ++r) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += double(x[r * C + c]) * x[r * C + c];
    const double rs = 1.0 / std::sqrt(ss / C + eps);
    for (int c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] * rs * w[c];
  }
  return y;
}

double norms_err_vs_double(const std::vector<float>& y, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

class Norms : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_kernel_threads(GetParam()); }
  void TearDown() override { set_kernel_threads(1); }
};

// Rows of small spread (scale 0.05, so var is 2.5e-3) where eps = 1e-2 changes every output.
TEST_P(Norms, LayerNormUsesItsEpsAndRunsWithoutBias) {
  const int N = 70, C = 67;  // N above one 64-row part; C not a multiple of 8
  auto x = randn(N * C, 21, 0.05f), w = randn(C, 22), b = randn(C, 23), dy = randn(N * C, 24);
  for (const float eps : {1e-5f, 1e-2f})
    for (const bool with_bias : {true, false}) {
      SCOPED_TRACE(testing::Message() << "eps " << eps << (with_bias ? " with bias" : " without bias"));
      const float* bias = with_bias ? b.data() : nullptr;
      std::vector<float> y(N * C), y_ref(N * C), m(N), r(N), m_ref(N), r_ref(N);
      layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), bias, N, C, eps);
      layernorm_forward_ref(y_ref.data(), m_ref.data(), r_ref.data(), x.data(), w.data(), bias, N, C, eps);
      EXPECT_LT(norm_err(y, y_ref), kNormsFastVsRef);
      EXPECT_LT(norms_err_vs_double(y_ref, layernorm_double(x, w, bias, N, C, eps)), kNormsVsDouble);
      // The other eps gives another result: eps is not ignored.
      EXPECT_GT(norms_err_vs_double(y_ref, layernorm_double(x, w, bias, N, C, eps == 1e-5f ? 1e-2 : 1e-5)),
                1e-3);

      std::vector<float> dx(N * C, 0.5f), dw(C, 0.25f), db(C, 0.125f), dx_ref = dx, dw_ref = dw, db_ref = db;
      layernorm_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dy.data(), x.data(), w.data(),
                         m.data(), r.data(), N, C);
      layernorm_backward_ref(dx_ref.data(), dw_ref.data(), with_bias ? db_ref.data() : nullptr, dy.data(),
                             x.data(), w.data(), m_ref.data(), r_ref.data(), N, C);
      EXPECT_LT(norm_err(dx, dx_ref), kNormsFastVsRef);
      EXPECT_LT(norm_err(dw, dw_ref), kNormsFastVsRef);
      if (with_bias)
        EXPECT_LT(norm_err(db, db_ref), kNormsFastVsRef);
      else
        EXPECT_EQ(db, std::vector<float>(C, 0.125f));  // untouched

      // Finite differences at unit scale (steps of 1e-2 are too coarse for rows of spread 0.05).
      auto xu = randn(N * C, 25);
      layernorm_forward_ref(y_ref.data(), m_ref.data(), r_ref.data(), xu.data(), w.data(), bias, N, C, eps);
      std::vector<float> gx(N * C, 0), gw(C, 0);
      layernorm_backward_ref(gx.data(), gw.data(), nullptr, dy.data(), xu.data(), w.data(), m_ref.data(),
                             r_ref.data(), N, C);
      auto f = [&] {
        layernorm_forward_ref(y_ref.data(), m_ref.data(), r_ref.data(), xu.data(), w.data(), bias, N, C, eps);
        return norms_dot(y_ref, dy);
      };
      EXPECT_LT(norms_fd_error(xu, gx, f), kNormsFiniteDiff) << "dx";
      EXPECT_LT(norms_fd_error(w, gw, f), kNormsFiniteDiff) << "dw";
    }
}

TEST_P(Norms, RmsNormFastMatchesRefDoubleAndFiniteDifferences) {
  for (const int C : {5, 64, 67}) {  // below one vector, a multiple of 8, a vector tail
    const int N = 131;               // three 64-row parts, the last one short
    SCOPED_TRACE(testing::Message() << "C " << C);
    auto x = randn(N * C, 31, 0.05f), w = randn(C, 32), dy = randn(N * C, 33);
    for (const float eps : {1e-6f, 1e-2f}) {
      std::vector<float> y(N * C, 7.0f), y_ref(N * C), r(N), r_ref(N);
      rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C, eps);
      rmsnorm_forward_ref(y_ref.data(), r_ref.data(), x.data(), w.data(), N, C, eps);
      EXPECT_LT(norm_err(y, y_ref), kNormsFastVsRef) << "eps " << eps;
      EXPECT_LT(norm_err(r, r_ref), kNormsFastVsRef) << "eps " << eps;
      EXPECT_LT(norms_err_vs_double(y_ref, rmsnorm_double(x, w, N, C, eps)), kNormsVsDouble) << "eps " << eps;
      EXPECT_GT(norms_err_vs_double(y_ref, rmsnorm_double(x, w, N, C, eps == 1e-6f ? 1e-2 : 1e-6)), 1e-3);

      // dinp accumulates onto what it held; dweight too.
      std::vector<float> dx(N * C, 0.5f), dw(C, 0.25f), dx_ref = dx, dw_ref = dw;
      rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), N, C);
      rmsnorm_backward_ref(dx_ref.data(), dw_ref.data(), dy.data(), x.data(), w.data(), r_ref.data(), N, C);
      EXPECT_LT(norm_err(dx, dx_ref), kNormsFastVsRef);
      EXPECT_LT(norm_err(dw, dw_ref), kNormsFastVsRef);

      // Finite differences at unit scale (steps of 1e-2 are too coarse for inputs of scale 0.05).
      auto xu = randn(N * C, 34);
      rmsnorm_forward_ref(y_ref.data(), r_ref.data(), xu.data(), w.data(), N, C, eps);
      std::vector<float> gx(N * C, 0), gw(C, 0);
      rmsnorm_backward_ref(gx.data(), gw.data(), dy.data(), xu.data(), w.data(), r_ref.data(), N, C);
      auto f = [&] {
        rmsnorm_forward_ref(y_ref.data(), r_ref.data(), xu.data(), w.data(), N, C, eps);
        return norms_dot(y_ref, dy);
      };
      EXPECT_LT(norms_fd_error(xu, gx, f), kNormsFiniteDiff) << "dx";
      EXPECT_LT(norms_fd_error(w, gw, f), kNormsFiniteDiff) << "dw";
    }
  }
}

// The fast backward's weight gradient sums fixed 64-row parts: the same bits for any thread count.
TEST(NormsThreads, FastBackwardIsBitwiseTheSameForOneAndTwoThreads) {
  const int N = 300, C = 96;
  auto x = randn(N * C, 41), w = randn(C, 42), dy = randn(N * C, 43), b = randn(C, 44);
  std::vector<float> r(N), m(N), y(N * C);
  rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C, 1e-6f);
  std::vector<std::vector<float>> rms_dw, ln_dw;
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), N, C);
    rms_dw.push_back(dw);
    layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
    std::fill(dw.begin(), dw.end(), 0.0f);
    layernorm_backward(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), m.data(), r.data(), N,
                       C);
    ln_dw.push_back(dw);
    rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C, 1e-6f);
  }
  set_kernel_threads(1);
  EXPECT_TRUE(norms_bitwise(rms_dw[0], rms_dw[1]));
  EXPECT_TRUE(norms_bitwise(ln_dw[0], ln_dw[1]));
}

INSTANTIATE_TEST_SUITE_P(Threads, Norms, ::testing::Values(1, 2));

// The cpu and emulated kernel tables give the CPU path's bits (LayerNorm without bias, RMSNorm); the
// emulated table refuses a buffer shorter than a row extent.
class NormsTables : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
  DeviceBuffer<float> put(const std::vector<float>& host) {
    DeviceBuffer<float> d(dev(), host.size());
    upload(d, std::span<const float>(host));
    return d;
  }
  static float* at(DeviceBuffer<float>& d) { return d.data().address(); }
};

TEST_P(NormsTables, LayerNormWithoutBiasAndRmsNormAreBitwiseTheCpuPath) {
  const int N = 37, C = 45;
  const auto x = randn(N * C, 51), w = randn(C, 52), dy = randn(N * C, 53), dx0 = randn(N * C, 54),
             dw0 = randn(C, 55);
  Kernels& k = dev().kernels();
  // LayerNorm without bias, eps 1e-3.
  std::vector<float> y(N * C), m(N), r(N), dx = dx0, dw = dw0;
  layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), nullptr, N, C, 1e-3f);
  layernorm_backward(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), m.data(), r.data(), N, C);
  auto d_x = put(x), d_w = put(w), d_dy = put(dy), d_dx = put(dx0), d_dw = put(dw0);
  DeviceBuffer<float> d_y(dev(), N * C), d_m(dev(), N), d_r(dev(), N);
  k.layernorm_forward(at(d_y), at(d_m), at(d_r), at(d_x), at(d_w), nullptr, N, C, 1e-3f);
  k.layernorm_backward(at(d_dx), at(d_dw), nullptr, at(d_dy), at(d_x), at(d_w), at(d_m), at(d_r), N, C);
  EXPECT_TRUE(norms_bitwise(download(d_y), y));
  EXPECT_TRUE(norms_bitwise(download(d_r), r));
  EXPECT_TRUE(norms_bitwise(download(d_dx), dx));
  EXPECT_TRUE(norms_bitwise(download(d_dw), dw));
  // RMSNorm.
  dx = dx0;
  dw = dw0;
  rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, C, 1e-6f);
  rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), r.data(), N, C);
  auto e_dx = put(dx0), e_dw = put(dw0);
  k.rmsnorm_forward(at(d_y), at(d_r), at(d_x), at(d_w), N, C, 1e-6f);
  k.rmsnorm_backward(at(e_dx), at(e_dw), at(d_dy), at(d_x), at(d_w), at(d_r), N, C);
  EXPECT_TRUE(norms_bitwise(download(d_y), y));
  EXPECT_TRUE(norms_bitwise(download(d_r), r));
  EXPECT_TRUE(norms_bitwise(download(e_dx), dx));
  EXPECT_TRUE(norms_bitwise(download(e_dw), dw));
}

INSTANTIATE_TEST_SUITE_P(Kinds, NormsTables, ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(NormsEmulated, ABufferShorterThanTheRowsIsRefused) {
  Backend& emu = backend(DeviceKind::emulated);
  const int N = 4, C = 8;
  DeviceBuffer<float> x(emu, N * C), w(emu, C), y(emu, N * C), r(emu, N), short_y(emu, N * C - 1),
      short_w(emu, C - 1);
  Kernels& k = emu.kernels();
  auto a = [](DeviceBuffer<float>& d) { return d.data().address(); };
  EXPECT_THROW(k.rmsnorm_forward(a(short_y), a(r), a(x), a(w), N, C, 1e-6f), InternalError);
  EXPECT_THROW(k.rmsnorm_backward(a(y), a(short_w), a(x), a(x), a(w), a(r), N, C), InternalError);
  EXPECT_THROW(k.layernorm_forward(a(y), a(r), a(r), a(x), a(w), a(short_w), N, C, 1e-5f), InternalError);
  EXPECT_NO_THROW(k.rmsnorm_forward(a(y), a(r), a(x), a(w), N, C, 1e-6f));
}

}  // namespace
}  // namespace tz
