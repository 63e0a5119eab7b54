// The MLP activations of the model families: exact GELU (erf form) and SwiGLU. Each fast path against
// its _ref twin and against the formula in double, element by element over a wide range (the bound the
// CUDA backend's tolerance rests on), each _ref backward against central finite differences, inputs
// far out in the tails finite, and the cpu and emulated kernel tables bitwise the CPU path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
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

constexpr double kActFastVsRef = 2e-5;   // normalized error over a buffer
constexpr double kActPointwise = 1e-6;   // |fast - exact| <= kActPointwise (1 + |exact|), each element
constexpr double kActFiniteDiff = 1e-2;  // fp32 central differences, step 1e-3 (relative error)

double gelu_exact_double(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
double gelu_exact_slope_double(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}
double silu_double(double g) {
  return g / (1.0 + std::exp(-g));
}

// The largest |got - want| / (1 + |want|).
double act_worst(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  return worst;
}

// Relative error of the gradient g against central differences of f (a function of x) at n entries.
template <typename F>
double act_fd_error(std::vector<float>& x, const std::vector<float>& g, F f) {
  std::mt19937 gen(13);
  double num = 0, den = 0;
  for (int s = 0; s < 32; ++s) {
    const std::size_t i = gen() % x.size();
    const float saved = x[i], h = 1e-3f;
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

double act_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

bool act_bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// n points evenly over [-lo, hi] (n not a multiple of 8, so the vector loops have a tail).
std::vector<float> act_sweep(long n, float lo, float hi) {
  std::vector<float> x(n);
  for (long i = 0; i < n; ++i) x[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return x;
}

class Activations : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_kernel_threads(GetParam()); }
  void TearDown() override { set_kernel_threads(1); }
};

TEST_P(Activations, GeluExactMatchesTheErfFormula) {
  const long n = 40'003;  // above the 16k-element thread chunk
  const auto x = act_sweep(n, -12.0f, 12.0f), dy = randn(n, 61);
  std::vector<float> y(n), y_ref(n), dx(n), dx_ref(n);
  gelu_exact_forward(y.data(), x.data(), n);
  gelu_exact_forward_ref(y_ref.data(), x.data(), n);
  gelu_exact_backward(dx.data(), x.data(), dy.data(), n);
  gelu_exact_backward_ref(dx_ref.data(), x.data(), dy.data(), n);
  EXPECT_LT(norm_err(y, y_ref), kActFastVsRef);
  EXPECT_LT(norm_err(dx, dx_ref), kActFastVsRef);
  std::vector<double> y_exact(n), slope_exact(n);
  std::vector<float> slope(n), ones(n, 1.0f);
  for (long i = 0; i < n; ++i) {
    y_exact[i] = gelu_exact_double(x[i]);
    slope_exact[i] = gelu_exact_slope_double(x[i]);
  }
  gelu_exact_backward(slope.data(), x.data(), ones.data(), n);
  EXPECT_LT(act_worst(y, y_exact), kActPointwise) << "forward";
  EXPECT_LT(act_worst(slope, slope_exact), kActPointwise) << "slope";
  gelu_exact_backward_ref(slope.data(), x.data(), ones.data(), n);
  EXPECT_LT(act_worst(y_ref, y_exact), kActPointwise) << "ref forward";
  EXPECT_LT(act_worst(slope, slope_exact), kActPointwise) << "ref slope";
  // The fast path keeps relative accuracy in the negative tail (Phi from erfc, no 1 - erf cancelling).
  for (long i = 0; i < n; ++i) {
    if (x[i] < -3.0f && x[i] > -6.0f) {
      ASSERT_NEAR(y[i], y_exact[i], 1e-5 * std::fabs(y_exact[i])) << "x " << x[i];
    }
  }

  // The same bits for any thread count (a thread chunk's tail takes the vector arithmetic too).
  set_kernel_threads(1);
  std::vector<float> y_one_thread(n);
  gelu_exact_forward(y_one_thread.data(), x.data(), n);
  set_kernel_threads(GetParam());
  EXPECT_TRUE(act_bitwise(y_one_thread, y));

  // dinp may alias dout.
  std::vector<float> inplace = dy;
  gelu_exact_backward(inplace.data(), x.data(), inplace.data(), n);
  EXPECT_TRUE(act_bitwise(inplace, dx));
}

TEST_P(Activations, GeluExactBackwardMatchesFiniteDifferences) {
  auto x = randn(997, 62, 2.0f);
  const auto dy = randn(997, 63);
  std::vector<float> y(x.size()), g(x.size());
  gelu_exact_backward_ref(g.data(), x.data(), dy.data(), static_cast<long>(x.size()));
  const double err = act_fd_error(x, g, [&] {
    gelu_exact_forward_ref(y.data(), x.data(), static_cast<long>(x.size()));
    return act_dot(y, dy);
  });
  EXPECT_LT(err, kActFiniteDiff);
}

TEST_P(Activations, SwigluMatchesTheFormulaAndFiniteDifferences) {
  for (const int F : {5, 64, 91}) {  // below one vector, a multiple of 8, a vector tail
    const int N = 211;
    SCOPED_TRACE(testing::Message() << "F " << F);
    const std::size_t NF = static_cast<std::size_t>(N) * F;
    auto inp = randn(2 * NF, 71, 3.0f);
    inp[0] = -100.0f;  // far in the tails: no overflow to inf or NaN
    inp[1] = 100.0f;
    inp[F] = 1e6f;
    const auto dy = randn(NF, 72);
    std::vector<float> y(NF, 7.0f), y_ref(NF), dx(2 * NF, 7.0f), dx_ref(2 * NF, 7.0f);
    swiglu_forward(y.data(), inp.data(), N, F);
    swiglu_forward_ref(y_ref.data(), inp.data(), N, F);
    swiglu_backward(dx.data(), inp.data(), dy.data(), N, F);
    swiglu_backward_ref(dx_ref.data(), inp.data(), dy.data(), N, F);
    EXPECT_LT(norm_err(y, y_ref), kActFastVsRef);
    EXPECT_LT(norm_err(dx, dx_ref), kActFastVsRef);
    std::vector<double> y_exact(NF), dx_exact(2 * NF);
    for (int r = 0; r < N; ++r)
      for (int j = 0; j < F; ++j) {
        const std::size_t o = static_cast<std::size_t>(r) * F + j,
                          gi = 2 * static_cast<std::size_t>(r) * F + j;
        const double g = inp[gi], u = inp[gi + F], s = 1.0 / (1.0 + std::exp(-g));
        y_exact[o] = silu_double(g) * u;
        dx_exact[gi] = dy[o] * u * s * (1.0 + g * (1.0 - s));
        dx_exact[gi + F] = dy[o] * g * s;
      }
    // Relative to the row's scale: u = 1e6 in row 0 makes that row's products large.
    for (std::size_t i = 0; i < NF; ++i)
      ASSERT_NEAR(y[i], y_exact[i], kActPointwise * (1 + std::fabs(y_exact[i]))) << i;
    for (std::size_t i = 0; i < 2 * NF; ++i)
      ASSERT_NEAR(dx[i], dx_exact[i], 2 * kActPointwise * (1 + std::fabs(dx_exact[i]))) << i;

    std::vector<float> x = randn(2 * NF, 73);
    std::vector<float> g(2 * NF);
    swiglu_backward_ref(g.data(), x.data(), dy.data(), N, F);
    const double err = act_fd_error(x, g, [&] {
      swiglu_forward_ref(y_ref.data(), x.data(), N, F);
      return act_dot(y_ref, dy);
    });
    EXPECT_LT(err, kActFiniteDiff);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, Activations, ::testing::Values(1, 2));

class ActivationTables : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
  DeviceBuffer<float> put(const std::vector<float>& host) {
    DeviceBuffer<float> d(dev(), host.size());
    upload(d, std::span<const float>(host));
    return d;
  }
  static float* at(DeviceBuffer<float>& d) { return d.data().address(); }
};

TEST_P(ActivationTables, GeluExactAndSwigluAreBitwiseTheCpuPath) {
  const int N = 33, F = 75;
  const long n = static_cast<long>(N) * F;
  const auto x = randn(2 * n, 81, 2.0f), dy = randn(n, 82);
  Kernels& k = dev().kernels();
  auto d_x = put(x), d_dy = put(dy);
  DeviceBuffer<float> d_y(dev(), n), d_dx(dev(), 2 * n);
  std::vector<float> y(n), dy_gelu(n), dx(2 * n);

  gelu_exact_forward(y.data(), x.data(), n);
  k.gelu_exact_forward(at(d_y), at(d_x), n);
  EXPECT_TRUE(act_bitwise(download(d_y), y));
  gelu_exact_backward(dy_gelu.data(), x.data(), dy.data(), n);
  k.gelu_exact_backward(at(d_y), at(d_x), at(d_dy), n);
  EXPECT_TRUE(act_bitwise(download(d_y), dy_gelu));

  swiglu_forward(y.data(), x.data(), N, F);
  swiglu_backward(dx.data(), x.data(), dy.data(), N, F);
  k.swiglu_forward(at(d_y), at(d_x), N, F);
  k.swiglu_backward(at(d_dx), at(d_x), at(d_dy), N, F);
  EXPECT_TRUE(act_bitwise(download(d_y), y));
  EXPECT_TRUE(act_bitwise(download(d_dx), dx));
}

INSTANTIATE_TEST_SUITE_P(Kinds, ActivationTables, ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(ActivationsEmulated, SwigluReadsTwoFWideRows) {
  Backend& emu = backend(DeviceKind::emulated);
  const int N = 4, F = 8;
  DeviceBuffer<float> half_inp(emu, N * F), inp(emu, 2 * N * F), out(emu, N * F), dinp(emu, 2 * N * F);
  Kernels& k = emu.kernels();
  auto a = [](DeviceBuffer<float>& d) { return d.data().address(); };
  EXPECT_THROW(k.swiglu_forward(a(out), a(half_inp), N, F), InternalError);
  EXPECT_THROW(k.swiglu_backward(a(out), a(inp), a(out), N, F), InternalError);  // dinp is 2F wide
  EXPECT_NO_THROW(k.swiglu_forward(a(out), a(inp), N, F));
  EXPECT_NO_THROW(k.swiglu_backward(a(dinp), a(inp), a(out), N, F));
}

}  // namespace
}  // namespace tz
