// The Llama and GPT-NeoX layers of the CUDA kernel table against the cpu backend's, on the same inputs:
// LayerNorm with another eps and without bias, RMSNorm, exact GELU and SwiGLU. Parameter gradients and
// the norms' dinp pre-filled to prove they accumulate, SwiGLU's dinp pre-filled with garbage to prove it
// is overwritten, odd sizes and one larger shape. |gpu - cpu| <= tol (1 + |cpu|) with the tolerance each
// CUDA file states: the norms 1e-5 (layernorm.cu), exact GELU and SwiGLU 2e-6 (pointwise.cu).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"

namespace tz {
namespace {

std::vector<float> na_randoms(std::size_t n, unsigned seed, float scale = 1.0f, float offset = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(offset, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void na_expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  std::size_t first_bad = got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(double(want[i])));
    if (!(err <= tol) && first_bad == got.size()) first_bad = i;
    if (err > worst || std::isnan(err)) worst = err;
  }
  if (first_bad != got.size())
    ADD_FAILURE() << what << ": element " << first_bad << ": cpu " << want[first_bad] << ", cuda "
                  << got[first_bad] << "; largest normalized error " << worst << " > " << tol;
}

class CudaNormsActivations : public ::testing::Test {
 protected:
  void SetUp() override { TZ_REQUIRE_CUDA(); }
  using Results = std::vector<std::vector<float>>;
  // body on the cuda backend, then on the cpu backend: out[0] cuda, out[1] cpu.
  static void both(const std::function<Results(Backend&)>& body, Results out[2]) {
    out[0] = body(backend(DeviceKind::cuda));
    out[1] = body(backend(DeviceKind::cpu));
  }
  static DeviceBuffer<float> put(Backend& b, const std::vector<float>& host) {
    DeviceBuffer<float> d(b, host.size());
    upload(d, std::span<const float>(host));
    return d;
  }
  static float* at(DeviceBuffer<float>& d) { return d.data().address(); }
};

struct NaShape {
  int N, C;
};
constexpr NaShape kNaShapes[] = {{74, 48}, {390, 4096 + 3}};

TEST_F(CudaNormsActivations, LayerNormWithEpsAndWithoutBiasWithinTolerance) {
  constexpr double kTol = 1e-5;
  for (const NaShape& sh : kNaShapes) {
    const int N = sh.N, C = sh.C;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const auto inp = na_randoms(NC, 1, 0.1f, 0.5f), weight = na_randoms(C, 2), dout = na_randoms(NC, 3),
               dinp0 = na_randoms(NC, 4), dw0 = na_randoms(C, 5);
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight);
          DeviceBuffer<float> out(dev, NC), mean(dev, N), rstd(dev, N);
          k.layernorm_forward(at(out), at(mean), at(rstd), at(d_inp), at(d_w), nullptr, N, C, 1e-2f);
          return Results{download(out), download(mean), download(rstd)};
        },
        r);
    const std::string at_shape = " at N=" + std::to_string(N) + " C=" + std::to_string(C);
    na_expect_near(r[0][0], r[1][0], kTol, "layernorm_forward (no bias, eps 1e-2) out" + at_shape);
    na_expect_near(r[0][2], r[1][2], kTol, "layernorm_forward (no bias, eps 1e-2) rstd" + at_shape);
    const std::vector<float> cpu_mean = r[1][1], cpu_rstd = r[1][2];  // backward runs on the cpu's on both
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight), d_dout = put(dev, dout);
          auto mean = put(dev, cpu_mean), rstd = put(dev, cpu_rstd), dinp = put(dev, dinp0),
               dw = put(dev, dw0);
          k.layernorm_backward(at(dinp), at(dw), nullptr, at(d_dout), at(d_inp), at(d_w), at(mean), at(rstd),
                               N, C);
          return Results{download(dinp), download(dw)};
        },
        r);
    na_expect_near(r[0][0], r[1][0], kTol, "layernorm_backward (no bias) dinp (accumulated)" + at_shape);
    na_expect_near(r[0][1], r[1][1], kTol, "layernorm_backward (no bias) dweight" + at_shape);
  }
}

TEST_F(CudaNormsActivations, RmsNormWithinTolerance) {
  constexpr double kTol = 1e-5;
  for (const NaShape& sh : kNaShapes) {
    const int N = sh.N, C = sh.C;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const auto inp = na_randoms(NC, 11, 2.0f, 0.5f), weight = na_randoms(C, 12), dout = na_randoms(NC, 13),
               dinp0 = na_randoms(NC, 14), dw0 = na_randoms(C, 15);
    Results r[2];
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight);
          DeviceBuffer<float> out(dev, NC), rstd(dev, N);
          k.rmsnorm_forward(at(out), at(rstd), at(d_inp), at(d_w), N, C, 1e-6f);
          return Results{download(out), download(rstd)};
        },
        r);
    const std::string at_shape = " at N=" + std::to_string(N) + " C=" + std::to_string(C);
    na_expect_near(r[0][0], r[1][0], kTol, "rmsnorm_forward out" + at_shape);
    na_expect_near(r[0][1], r[1][1], kTol, "rmsnorm_forward rstd" + at_shape);
    const std::vector<float> cpu_rstd = r[1][1];  // backward runs on the cpu's rstd on both
    both(
        [&](Backend& dev) {
          Kernels& k = dev.kernels();
          auto d_inp = put(dev, inp), d_w = put(dev, weight), d_dout = put(dev, dout);
          auto rstd = put(dev, cpu_rstd), dinp = put(dev, dinp0), dw = put(dev, dw0);
          k.rmsnorm_backward(at(dinp), at(dw), at(d_dout), at(d_inp), at(d_w), at(rstd), N, C);
          return Results{download(dinp), download(dw)};
        },
        r);
    na_expect_near(r[0][0], r[1][0], kTol, "rmsnorm_backward dinp (accumulated)" + at_shape);
    na_expect_near(r[0][1], r[1][1], kTol, "rmsnorm_backward dweight" + at_shape);
  }
}

TEST_F(CudaNormsActivations, GeluExactAndSwigluWithinTolerance) {
  constexpr double kTol = 2e-6;
  const int N = 301, F = 347;  // F not a multiple of a warp or a vector
  const long n = static_cast<long>(N) * F;
  auto x = na_randoms(2 * n, 21, 3.0f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 11.0f;
  x[3] = -11.0f;
  x[4] = -100.0f;  // SwiGLU's gate far in the tails
  x[5] = 100.0f;
  const auto dout = na_randoms(n, 22), garbage = na_randoms(2 * n, 23);
  Results r[2];
  both(
      [&](Backend& dev) {
        Kernels& k = dev.kernels();
        auto d_x = put(dev, x), d_dout = put(dev, dout);
        auto y = put(dev, garbage), dy = put(dev, garbage), inplace = put(dev, dout);
        auto s = put(dev, garbage), ds = put(dev, garbage);
        k.gelu_exact_forward(at(y), at(d_x), n);
        k.gelu_exact_backward(at(dy), at(d_x), at(d_dout), n);
        k.gelu_exact_backward(at(inplace), at(d_x), at(inplace), n);  // dinp aliasing dout
        k.swiglu_forward(at(s), at(d_x), N, F);
        k.swiglu_backward(at(ds), at(d_x), at(d_dout), N, F);
        auto head = [n](std::vector<float> v) {
          v.resize(n);
          return v;
        };
        return Results{head(download(y)), head(download(dy)), download(inplace), head(download(s)),
                       download(ds)};
      },
      r);
  na_expect_near(r[0][0], r[1][0], kTol, "gelu_exact_forward");
  na_expect_near(r[0][1], r[1][1], kTol, "gelu_exact_backward");
  na_expect_near(r[0][2], r[1][1], kTol, "gelu_exact_backward in place");
  na_expect_near(r[0][3], r[1][3], kTol, "swiglu_forward");
  na_expect_near(r[0][4], r[1][4], kTol, "swiglu_backward");
}

}  // namespace
}  // namespace tz
