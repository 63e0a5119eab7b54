// The kernel tables of the backends (device/kernels.hpp): every entry, run on device buffers of the
// cpu and of the emulated backend, gives bitwise the result of the CPU path called on host memory
// (which its own tests hold to a plain reference); the emulated table refuses a buffer shorter than
// the extent the kernel reads or writes (a matrix's rows at its leading dimension included) and a
// host pointer passed as device memory.
#include "device/kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "device/cpu/adamw.hpp"
#include "device/cpu/block_quantize.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/reduce.hpp"
#include "device/cpu/sum_of_squares.hpp"

namespace tz {
namespace {

std::vector<float> randoms(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

template <typename T>
void expect_bitwise(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ADD_FAILURE() << what << ": first difference at element " << i;
      return;
    }
}

class KernelTables : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
  Kernels& k() { return dev().kernels(); }
  template <typename T>
  DeviceBuffer<T> on_device(const std::vector<T>& host) {
    DeviceBuffer<T> b(dev(), host.size());
    upload(b, std::span<const T>(host));
    return b;
  }
};

TEST_P(KernelTables, ConversionsAndElementwisePassesMatchTheCpuPaths) {
  const std::size_t n = 40'003;  // not a multiple of any vector width or piece
  std::vector<float> x = randoms(n, 1), y = randoms(n, 2);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = -0.0f;
  std::vector<bf16> want16(n);
  bf16_from_floats(want16.data(), x.data(), n);
  std::vector<float> widened(n);
  floats_from_bf16(widened.data(), want16.data(), n);

  auto dx = on_device(x);
  DeviceBuffer<bf16> d16(dev(), n);
  k().narrow_to_bf16(d16.data(), dx.data(), n);
  expect_bitwise(download(d16), want16, "narrow_to_bf16");
  DeviceBuffer<float> dw(dev(), n);
  k().widen_from_bf16(dw.data(), d16.data(), n);
  expect_bitwise(download(dw), widened, "widen_from_bf16");

  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::size_t bytes = n * dtype_bytes(dtype);
    std::vector<std::byte> a(bytes), b(bytes), want(bytes);
    if (dtype == DType::f32) {
      std::memcpy(a.data(), x.data(), bytes);
      std::memcpy(b.data(), y.data(), bytes);
    } else {
      bf16_from_floats(reinterpret_cast<bf16*>(a.data()), x.data(), n);
      bf16_from_floats(reinterpret_cast<bf16*>(b.data()), y.data(), n);
    }
    reduce_add(want.data(), a.data(), b.data(), n, dtype);
    auto da = on_device(a), db = on_device(b);
    k().reduce_add(da.data(), da.data(), db.data(), n, dtype);  // in place, as the ring does
    expect_bitwise(download(da), want, "reduce_add");

    std::vector<float> acc = y;
    for (std::size_t i = 0; i < n; ++i)
      acc[i] += dtype == DType::f32 ? x[i] : to_float(reinterpret_cast<const bf16*>(b.data())[i]);
    auto dacc = on_device(y);
    auto dsrc = on_device(dtype == DType::f32 ? a : b);
    k().accumulate(dacc.data(), dsrc.data(), n, dtype);
    expect_bitwise(download(dacc), acc, "accumulate");
  }

  auto dg = on_device(y);
  DeviceBuffer<bf16> dn(dev(), n);
  k().narrow_and_clear(dn.data(), dg.data(), n);
  std::vector<bf16> y16(n);
  bf16_from_floats(y16.data(), y.data(), n);
  expect_bitwise(download(dn), y16, "narrow_and_clear's narrowing");
  expect_bitwise(download(dg), std::vector<float>(n, 0.0f), "narrow_and_clear's clearing");

  const double want_ss = sum_of_squares(y.data(), n), got_ss = k().sum_of_squares(on_device(y).data(), n);
  EXPECT_EQ(std::memcmp(&want_ss, &got_ss, 8), 0) << want_ss << " " << got_ss;
}

TEST_P(KernelTables, AdamWMatchesTheCpuPath) {
  const std::size_t n = 10'007;
  std::vector<float> p = randoms(n, 3), g = randoms(n, 4, 0.1f), m = randoms(n, 5, 0.01f), v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::abs(randoms(1, 100 + i % 7)[0]) * 1e-4f;
  const std::vector<DecaySegment> segments = {{0, 4000, true}, {4000, 7, false}, {4007, n - 4007, true}};
  const AdamWParams hp{.lr = 1e-3f, .weight_decay = 0.1f};
  std::vector<float> wp = p, wm = m, wv = v;
  const AdamWStateBound want =
      adamw_update(wp.data(), g.data(), wm.data(), wv.data(), segments, n, 3, hp, 0.5f);
  auto dp = on_device(p), dg = on_device(g), dm = on_device(m), dv = on_device(v);
  EXPECT_EQ(k().adamw_nonfinite_count(dp.data(), dg.data(), dm.data(), dv.data(), segments, n, 3, hp, 0.5f),
            0u);
  const AdamWStateBound got =
      k().adamw_update(dp.data(), dg.data(), dm.data(), dv.data(), segments, n, 3, hp, 0.5f);
  expect_bitwise(download(dp), wp, "params");
  expect_bitwise(download(dm), wm, "m");
  expect_bitwise(download(dv), wv, "v");
  EXPECT_EQ(got.abs_p, want.abs_p);
  EXPECT_EQ(got.v, want.v);
  // A huge gradient overflows v: both count the same elements.
  std::vector<float> huge = g;
  huge[17] = 3e38f;
  auto dh = on_device(huge);
  EXPECT_EQ(k().adamw_nonfinite_count(dp.data(), dh.data(), dm.data(), dv.data(), segments, n, 4, hp, 1.0f),
            adamw_nonfinite_count(wp.data(), huge.data(), wm.data(), wv.data(), segments, n, 4, hp, 1.0f));
}

TEST_P(KernelTables, BlockQuantizationMatchesTheCpuPath) {
  const std::size_t count = 5'000;  // not a multiple of the block
  for (QuantBits bits : {QuantBits::int8, QuantBits::int4}) {
    const QuantOptions opts{.bits = bits, .block_size = 256};
    std::vector<float> x = randoms(count, 6);
    x[300] = std::numeric_limits<float>::infinity();
    std::vector<std::uint8_t> want_q(quantized_bytes(count, opts));
    const QuantStats want_stats = quantize(x.data(), DType::f32, count, want_q.data(), opts);
    std::vector<float> want_y(count), want_acc = randoms(count, 7);
    dequantize(want_q.data(), count, want_y.data(), DType::f32, opts);
    std::vector<float> acc = want_acc;
    dequantize_add(want_q.data(), count, want_acc.data(), opts);

    auto dx = on_device(x);
    DeviceBuffer<std::uint8_t> dq(dev(), want_q.size());
    const QuantStats got_stats = k().quantize(dq.data(), as_bytes(dx.data()), count, DType::f32, opts);
    EXPECT_EQ(got_stats.nonfinite_blocks, want_stats.nonfinite_blocks);
    expect_bitwise(download(dq), want_q, "codes");
    DeviceBuffer<float> dy(dev(), count);
    k().dequantize(as_bytes(dy.data()), DType::f32, dq.data(), count, opts);
    expect_bitwise(download(dy), want_y, "dequantize");
    auto dacc = on_device(acc);
    k().dequantize_add(dacc.data(), dq.data(), count, opts);
    expect_bitwise(download(dacc), want_acc, "dequantize_add");
  }
}

TEST_P(KernelTables, GemmMatchesTheCpuPathWithBf16BAndLeadingDimensions) {
  const int M = 37, N = 29, K = 41, lda = 45, ldb = 33, ldc = 31;
  const std::vector<float> A = randoms(static_cast<std::size_t>(M) * lda, 8),
                           B = randoms(static_cast<std::size_t>(K) * ldb, 9), bias = randoms(N, 10);
  std::vector<bf16> B16(B.size());
  bf16_from_floats(B16.data(), B.data(), B.size());
  for (bool use16 : {false, true}) {
    std::vector<float> C(static_cast<std::size_t>(M) * ldc, 0.25f), sums(M, 0.0f);
    GemmArgs g{.M = M,
               .N = N,
               .K = K,
               .A = A.data(),
               .lda = lda,
               .ldb = ldb,
               .beta = 1.0f,
               .C = C.data(),
               .ldc = ldc,
               .bias = bias.data(),
               .a_row_sums = sums.data()};
    if (use16)
      g.B16 = B16.data();
    else
      g.B = B.data();
    gemm(g);
    auto dA = on_device(A), dB = on_device(B), dbias = on_device(bias);
    auto dB16 = on_device(B16);
    auto dC = on_device(std::vector<float>(C.size(), 0.25f)), dsums = on_device(std::vector<float>(M, 0.0f));
    GemmArgs d = g;
    d.A = dA.data().address();
    d.B = use16 ? nullptr : dB.data().address();
    d.B16 = use16 ? dB16.data().address() : nullptr;
    d.C = dC.data().address();
    d.bias = dbias.data().address();
    d.a_row_sums = dsums.data().address();
    k().gemm(d);
    expect_bitwise(download(dC), C, use16 ? "C (bf16 B)" : "C");
    expect_bitwise(download(dsums), sums, "row sums of A");
  }
}

TEST_P(KernelTables, ATokenIdOutsideTheVocabularyIsAnErrorNotAnAccess) {
  const int B = 1, T = 3, C = 4, V = 5;
  auto out = on_device(std::vector<float>(B * T * C)), wte = on_device(std::vector<float>(V * C, 1.0f));
  auto wpe = on_device(std::vector<float>(T * C)), dout = on_device(std::vector<float>(B * T * C, 1.0f));
  for (std::int32_t bad : {-1, V, 1 << 30}) {
    auto tokens = on_device(std::vector<std::int32_t>{0, bad, 1});
    EXPECT_THROW(k().encoder_forward(out.data().address(), tokens.data().address(), wte.data().address(),
                                     wpe.data().address(), B, T, C, V),
                 InternalError);
    EXPECT_THROW(k().encoder_backward(wte.data().address(), wpe.data().address(), dout.data().address(),
                                      tokens.data().address(), B, T, C, V),
                 InternalError);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, KernelTables, ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(EmulatedKernels, ABufferShorterThanTheKernelsExtentOrAHostPointerIsRefused) {
  Backend& emu = backend(DeviceKind::emulated);
  DeviceBuffer<float> a(emu, 100), short_out(emu, 99);
  EXPECT_THROW(emu.kernels().sum_of_squares(a.data(), 101), InternalError);
  EXPECT_THROW(emu.kernels().narrow_to_bf16(DevicePtr<bf16>(&emu, nullptr), a.data(), 100), InternalError);
  std::vector<float> host(100);
  EXPECT_THROW(emu.kernels().sum_of_squares(DevicePtr<const float>(&emu, host.data()), 100), InternalError);
  // A matrix at leading dimension 10 spans (rows - 1) * 10 + cols elements: 99 are one short.
  DeviceBuffer<float> A(emu, 100), B(emu, 100);
  GemmArgs g{.M = 10,
             .N = 10,
             .K = 10,
             .A = A.data().address(),
             .lda = 10,
             .B = B.data().address(),
             .ldb = 10,
             .C = short_out.data().address(),
             .ldc = 10};
  EXPECT_THROW(emu.kernels().gemm(g), InternalError);
  DeviceBuffer<float> out(emu, 100);
  g.C = out.data().address();
  EXPECT_NO_THROW(emu.kernels().gemm(g));
}

TEST(EmulatedKernels, UnusableQuantizerOptionsAreInputErrorsBeforeAnyExtentIsComputed) {
  // The extent of a quantized buffer divides by the block size: a block size of 0 must be refused
  // first, as the cpu backend refuses it, not divide by zero.
  Backend& emu = backend(DeviceKind::emulated);
  DeviceBuffer<float> x(emu, 64);
  DeviceBuffer<std::uint8_t> q(emu, 1024);
  for (std::size_t block : {std::size_t{0}, std::size_t{48}}) {
    const QuantOptions opts{.block_size = block};
    EXPECT_THROW(
        emu.kernels().quantize(q.data(), as_bytes(DevicePtr<const float>(x.data())), 64, DType::f32, opts),
        InputError);
    EXPECT_THROW(emu.kernels().dequantize(as_bytes(x.data()), DType::f32, q.data(), 64, opts), InputError);
    EXPECT_THROW(emu.kernels().dequantize_add(x.data(), q.data(), 64, opts), InputError);
  }
}

}  // namespace
}  // namespace tz
