// The CUDA kernel table against the cpu backend's, entry by entry, on the same inputs: conversions,
// elementwise passes, the fp64 sum of squares and AdamW bitwise, NaN payloads aside (NaN, -0, inf,
// subnormals, ties, Adam's L2 and overflowing updates included); products (cuBLAS, fp32) within fp32 rounding
// of another summation order, with bf16 B, transposes, leading dimensions, beta, bias and row sums.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/bf16_convert.hpp"
#include "cuda/cuda_test_support.hpp"
#include "device/kernels.hpp"
#include "model/test_util.hpp"

namespace tz {
namespace {

// Whether x is a NaN of its type (fp32, fp64, or bf16 bits).
bool kernels_is_nan(float x) {
  return std::isnan(x);
}
bool kernels_is_nan(double x) {
  return std::isnan(x);
}
bool kernels_is_nan(bf16 x) {
  return (x.bits & 0x7fffu) > 0x7f80u;
}

// Bitwise, except that any NaN equals any NaN: an x86 operation returns the payload of one of its
// NaN operands (which one, the compiler's operand order decides), a GPU the canonical NaN. Where a
// NaN is, and every other bit, must agree.
template <typename T>
void kernels_expect_bitwise(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (kernels_is_nan(got[i]) && kernels_is_nan(want[i])) continue;
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ADD_FAILURE() << what << ": first difference at element " << i;
      return;
    }
  }
}

// Runs one entry on both backends: `run(kernels, to_device)` with inputs placed on each backend.
class CudaKernelTable : public ::testing::Test {
 protected:
  void SetUp() override { TZ_REQUIRE_CUDA(); }
  Backend& gpu() { return backend(DeviceKind::cuda); }
  Backend& cpu() { return backend(DeviceKind::cpu); }
  template <typename T>
  static DeviceBuffer<T> put(Backend& b, const std::vector<T>& host) {
    DeviceBuffer<T> d(b, host.size());
    upload(d, std::span<const T>(host));
    return d;
  }
};

TEST_F(CudaKernelTable, ConversionsAndElementwisePassesAreBitwise) {
  const std::size_t n = 300'007;
  std::vector<float> x = test::randn(n, 1), y = test::randn(n, 2);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = -0.0f;
  x[7] = std::numeric_limits<float>::infinity();
  x[8] = 1e-40f;                             // subnormal
  x[9] = std::bit_cast<float>(0x3f808000u);  // a tie: rounds to even
  x[10] = std::bit_cast<float>(0x3f818000u);
  struct Saved {
    std::vector<float> f32;
    std::vector<bf16> b16;
    std::vector<double> f64;
  };
  std::vector<Saved> results[2];
  for (int side = 0; side < 2; ++side) {
    Backend& dev = side == 0 ? gpu() : cpu();
    Kernels& k = dev.kernels();
    auto save = [&](auto v) {
      Saved r;
      if constexpr (std::is_same_v<decltype(v), std::vector<float>>)
        r.f32 = std::move(v);
      else if constexpr (std::is_same_v<decltype(v), std::vector<bf16>>)
        r.b16 = std::move(v);
      else
        r.f64 = std::move(v);
      results[side].push_back(std::move(r));
    };
    auto dx = put(dev, x), dy = put(dev, y);
    DeviceBuffer<bf16> d16(dev, n);
    k.narrow_to_bf16(d16.data(), dx.data(), n);
    save(download(d16));
    DeviceBuffer<float> dw(dev, n);
    k.widen_from_bf16(dw.data(), d16.data(), n);
    save(download(dw));
    for (DType dtype : {DType::f32, DType::bf16}) {
      auto da = put(dev, x), db = put(dev, y);
      if (dtype == DType::f32) {
        k.reduce_add(as_bytes(da.data()), as_bytes(DevicePtr<const float>(da.data())),
                     as_bytes(DevicePtr<const float>(db.data())), n, dtype);  // in place, as the ring does
        save(download(da));
      } else {
        DeviceBuffer<bf16> a16(dev, n), b16(dev, n);
        k.narrow_to_bf16(a16.data(), dx.data(), n);
        k.narrow_to_bf16(b16.data(), dy.data(), n);
        k.reduce_add(as_bytes(b16.data()), as_bytes(DevicePtr<const bf16>(a16.data())),
                     as_bytes(DevicePtr<const bf16>(b16.data())), n, dtype);
        save(download(b16));
        auto acc = put(dev, y);
        k.accumulate(acc.data(), as_bytes(DevicePtr<const bf16>(a16.data())), n, DType::bf16);
        save(download(acc));
      }
    }
    auto acc = put(dev, y);
    k.accumulate(acc.data(), as_bytes(DevicePtr<const float>(dx.data())), n, DType::f32);
    save(download(acc));
    std::vector<double> dx64(x.begin(), x.end()), dy64(y.begin(), y.end());
    auto a64 = put(dev, dx64), b64 = put(dev, dy64);
    k.reduce_add(as_bytes(a64.data()), as_bytes(DevicePtr<const double>(a64.data())),
                 as_bytes(DevicePtr<const double>(b64.data())), n, DType::f64);
    save(download(a64));
    auto dg = put(dev, y);
    DeviceBuffer<bf16> dn(dev, n);
    k.narrow_and_clear(dn.data(), dg.data(), n);
    save(download(dn));
    save(download(dg));
    // The sum of squares over sizes around its 64 Ki-element blocks and 8 lanes.
    std::vector<double> sums;
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{65'536},
                          std::size_t{65'543}, std::size_t{200'003}, n})
      sums.push_back(k.sum_of_squares(dy.data(), m));
    save(sums);
  }
  const char* names[] = {"narrow_to_bf16",
                         "widen_from_bf16",
                         "reduce_add f32",
                         "reduce_add bf16",
                         "accumulate bf16",
                         "accumulate f32",
                         "reduce_add f64",
                         "narrow_and_clear's narrowing",
                         "narrow_and_clear's clearing",
                         "sum_of_squares"};
  ASSERT_EQ(results[0].size(), std::size(names));
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    kernels_expect_bitwise(results[0][i].f32, results[1][i].f32, names[i]);
    kernels_expect_bitwise(results[0][i].b16, results[1][i].b16, names[i]);
    kernels_expect_bitwise(results[0][i].f64, results[1][i].f64, names[i]);
  }
}

struct AdamWResult {
  std::vector<float> p, m, v;
  AdamWStateBound bound;
  std::size_t nonfinite = 0;
};

AdamWResult adamw_on(Backend& dev, const std::vector<float>& p, const std::vector<float>& g,
                     const std::vector<float>& m, const std::vector<float>& v,
                     const std::vector<DecaySegment>& segments, int step, const AdamWParams& hp,
                     float scale) {
  auto put = [&](const std::vector<float>& h) {
    DeviceBuffer<float> d(dev, h.size());
    upload(d, std::span<const float>(h));
    return d;
  };
  auto dp = put(p), dg = put(g), dm = put(m), dv = put(v);
  const std::size_t n = p.size();
  AdamWResult r;
  r.nonfinite = dev.kernels().adamw_nonfinite_count(dp.data(), dg.data(), dm.data(), dv.data(), segments, n,
                                                    step, hp, scale);
  r.bound =
      dev.kernels().adamw_update(dp.data(), dg.data(), dm.data(), dv.data(), segments, n, step, hp, scale);
  r.p = download(dp);
  r.m = download(dm);
  r.v = download(dv);
  return r;
}

TEST_F(CudaKernelTable, AdamWIsBitwiseWithItsStateBound) {
  const std::size_t n = 100'007;
  std::vector<float> p = test::randn(n, 3), g = test::randn(n, 4, 0.1f), m = test::randn(n, 5, 0.01f);
  std::vector<float> v = test::randn(n, 6, 1e-4f);
  for (float& x : v) x = std::abs(x);
  const std::vector<DecaySegment> segments = {
      {0, 40'000, true}, {40'000, 7, false}, {40'007, n - 40'007, true}};
  for (bool decoupled : {true, false})
    for (int step : {1, 3, 1000}) {
      const AdamWParams hp{.lr = 1e-3f, .weight_decay = 0.1f, .decoupled = decoupled};
      const AdamWResult got = adamw_on(gpu(), p, g, m, v, segments, step, hp, 0.5f);
      const AdamWResult want = adamw_on(cpu(), p, g, m, v, segments, step, hp, 0.5f);
      const std::string what = fmt::format("decoupled {} step {}", decoupled, step);
      kernels_expect_bitwise(got.p, want.p, what + " params");
      kernels_expect_bitwise(got.m, want.m, what + " m");
      kernels_expect_bitwise(got.v, want.v, what + " v");
      EXPECT_EQ(got.nonfinite, 0u);
      EXPECT_EQ(got.bound.abs_p, want.bound.abs_p) << what;
      EXPECT_EQ(got.bound.abs_m, want.bound.abs_m) << what;
      EXPECT_EQ(got.bound.v, want.bound.v) << what;
      EXPECT_EQ(got.bound.v_min, want.bound.v_min) << what;
    }
  // An overflowing gradient and a NaN in the state: the same count, the same NaN-flagged bound.
  std::vector<float> huge = g, bad_m = m;
  huge[17] = 3e38f;
  huge[99'999] = -3e38f;
  bad_m[1234] = std::numeric_limits<float>::quiet_NaN();
  const AdamWParams hp{.lr = 1e-3f};
  const AdamWResult got = adamw_on(gpu(), p, huge, bad_m, v, segments, 4, hp, 1.0f);
  const AdamWResult want = adamw_on(cpu(), p, huge, bad_m, v, segments, 4, hp, 1.0f);
  EXPECT_EQ(got.nonfinite, want.nonfinite);
  EXPECT_GE(got.nonfinite, 3u);
  kernels_expect_bitwise(got.p, want.p, "params after overflow");
  EXPECT_TRUE(std::isnan(got.bound.abs_m) && std::isnan(want.bound.abs_m));
  EXPECT_EQ(std::isnan(got.bound.v), std::isnan(want.bound.v));
  EXPECT_EQ(std::isnan(got.bound.abs_p), std::isnan(want.bound.abs_p));
}

// C from `args` on a backend: matrices uploaded, the product run, C and the row sums read back.
struct GemmResult {
  std::vector<float> C, sums;
};
GemmResult gemm_on(Backend& dev, GemmArgs g, const std::vector<float>& A, const std::vector<float>& B,
                   const std::vector<bf16>& B16, const std::vector<float>& C0, const std::vector<float>& bias,
                   bool use16, bool sums) {
  auto put = [&](const auto& h) {
    using T = typename std::decay_t<decltype(h)>::value_type;
    DeviceBuffer<T> d(dev, h.size());
    upload(d, std::span<const T>(h));
    return d;
  };
  auto dA = put(A), dB = put(B), dC = put(C0), dbias = put(bias), dsums = put(std::vector<float>(g.M, 0.5f));
  auto dB16 = put(B16);
  g.A = dA.data().address();
  g.B = use16 ? nullptr : dB.data().address();
  g.B16 = use16 ? dB16.data().address() : nullptr;
  g.C = dC.data().address();
  g.bias = bias.empty() ? nullptr : dbias.data().address();
  g.a_row_sums = sums ? dsums.data().address() : nullptr;
  dev.kernels().gemm(g);
  return {download(dC), download(dsums)};
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(double(got[i]) - want[i]) <= tol * (1.0 + std::abs(double(want[i]))))) {
      ADD_FAILURE() << what << ": element " << i << " " << got[i] << " vs " << want[i];
      return;
    }
}

TEST_F(CudaKernelTable, ProductsMatchTheCpuGemmWithinFp32Rounding) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool use16 : {false, true}) {
        const int M = 67, N = 45, K = 130;
        const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        const std::vector<float> A = test::randn(static_cast<std::size_t>(ta ? K : M) * lda, 8),
                                 B = test::randn(static_cast<std::size_t>(tb ? N : K) * ldb, 9),
                                 bias = test::randn(N, 10),
                                 C0 = test::randn(static_cast<std::size_t>(M) * ldc, 11);
        std::vector<bf16> B16(B.size());
        bf16_from_floats(B16.data(), B.data(), B.size());
        for (float beta : {0.0f, 1.0f}) {
          const GemmArgs g{.trans_a = ta,
                           .trans_b = tb,
                           .M = M,
                           .N = N,
                           .K = K,
                           .alpha = 0.75f,
                           .lda = lda,
                           .ldb = ldb,
                           .beta = beta,
                           .ldc = ldc};
          const GemmResult got = gemm_on(gpu(), g, A, B, B16, C0, bias, use16, true);
          const GemmResult want = gemm_on(cpu(), g, A, B, B16, C0, bias, use16, true);
          const std::string what = fmt::format("ta {} tb {} bf16 {} beta {}", ta, tb, use16, beta);
          expect_close(got.C, want.C, 2e-5, what + " C");
          expect_close(got.sums, want.sums, 2e-5, what + " row sums");
        }
      }
  // beta 0 never reads C: NaN there does not leak.
  const int M = 8, N = 8, K = 8;
  const std::vector<float> A = test::randn(64, 12), B = test::randn(64, 13),
                           C0(64, std::numeric_limits<float>::quiet_NaN());
  const GemmArgs g{.M = M, .N = N, .K = K, .lda = K, .ldb = N, .ldc = N};
  const GemmResult got = gemm_on(gpu(), g, A, B, {}, C0, {}, false, false);
  for (float c : got.C) EXPECT_FALSE(std::isnan(c));
}

}  // namespace
}  // namespace tz
