// The grouped-query attention and rotary entries of the kernel tables (device/kernels.hpp), on device
// buffers of the cpu and of the emulated backend: bitwise the CPU path called on host memory (which
// attention_test.cpp and rotary_test.cpp hold to the plain references); the emulated table refuses a
// qkv buffer sized for KV key/value heads when a call claims more (KV = H), and a rotary table one row
// short.
#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "device/cpu/layers.hpp"
#include "device/device_buffer.hpp"
#include "device/kernels.hpp"

namespace tz {
namespace {

std::vector<float> gqa_table_randoms(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class AttentionKernelTables : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Backend& dev() { return backend(GetParam()); }
  Kernels& k() { return dev().kernels(); }
  DeviceBuffer<float> on_device(const std::vector<float>& host) {
    DeviceBuffer<float> b(dev(), host.size());
    upload(b, std::span<const float>(host));
    return b;
  }
};

TEST_P(AttentionKernelTables, GroupedQueryAttentionAndRotaryAreTheCpuPaths) {
  const int B = 2, T = 70, H = 6, KV = 2, D = 12, R = 6;
  const std::size_t N = std::size_t(B) * T, Q = N * (H + 2 * KV) * D, O = N * H * D,
                    S = std::size_t(B) * H * T;
  const std::size_t table = std::size_t(T) * (R / 2);
  const auto qkv0 = gqa_table_randoms(Q, 1), dout = gqa_table_randoms(O, 2);
  const auto cos = gqa_table_randoms(table, 3), sin = gqa_table_randoms(table, 4);

  // On host memory.
  std::vector<float> qkv = qkv0, out(O), lse(S), dqkv(Q);
  rotary_forward(qkv.data(), cos.data(), sin.data(), B, T, H, KV, D, R);
  attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, KV, D);
  attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, H, KV, D);
  rotary_backward(dqkv.data(), cos.data(), sin.data(), B, T, H, KV, D, R);

  auto d_qkv = on_device(qkv0), d_dout = on_device(dout), d_cos = on_device(cos), d_sin = on_device(sin);
  DeviceBuffer<float> d_out(dev(), O), d_lse(dev(), S), d_dqkv(dev(), Q);
  float* q = d_qkv.data().address();
  k().rotary_forward(q, d_cos.data().address(), d_sin.data().address(), B, T, H, KV, D, R);
  k().attention_forward(d_out.data().address(), d_lse.data().address(), q, B, T, H, KV, D);
  k().attention_backward(d_dqkv.data().address(), d_dout.data().address(), q, d_out.data().address(),
                         d_lse.data().address(), B, T, H, KV, D);
  k().rotary_backward(d_dqkv.data().address(), d_cos.data().address(), d_sin.data().address(), B, T, H, KV, D,
                      R);
  EXPECT_EQ(download(d_qkv), qkv);
  EXPECT_EQ(download(d_out), out);
  EXPECT_EQ(download(d_lse), lse);
  EXPECT_EQ(download(d_dqkv), dqkv);
}

INSTANTIATE_TEST_SUITE_P(Kinds, AttentionKernelTables,
                         ::testing::Values(DeviceKind::cpu, DeviceKind::emulated),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(EmulatedAttentionKernels, BuffersShorterThanTheGroupedShapeAreRefused) {
  Backend& emu = backend(DeviceKind::emulated);
  Kernels& k = emu.kernels();
  const int B = 1, T = 8, H = 4, KV = 2, D = 4, R = 4;
  const std::size_t N = std::size_t(B) * T;
  // qkv sized for (H + 2 KV) D columns with KV = 2: passing KV = 4 (H + 2 H) reads past it.
  DeviceBuffer<float> qkv(emu, N * (H + 2 * KV) * D), out(emu, N * H * D), lse(emu, std::size_t(B) * H * T);
  DeviceBuffer<float> dqkv(emu, N * (H + 2 * KV) * D), cos(emu, std::size_t(T) * R / 2),
      sin(emu, std::size_t(T) * R / 2);
  EXPECT_NO_THROW(
      k.attention_forward(out.data().address(), lse.data().address(), qkv.data().address(), B, T, H, KV, D));
  EXPECT_THROW(
      k.attention_forward(out.data().address(), lse.data().address(), qkv.data().address(), B, T, H, H, D),
      InternalError);
  EXPECT_THROW(k.attention_backward(dqkv.data().address(), out.data().address(), qkv.data().address(),
                                    out.data().address(), lse.data().address(), B, T, H, H, D),
               InternalError);
  // A rotary table of T - 1 rows.
  DeviceBuffer<float> short_table(emu, std::size_t(T - 1) * R / 2);
  EXPECT_NO_THROW(
      k.rotary_forward(qkv.data().address(), cos.data().address(), sin.data().address(), B, T, H, KV, D, R));
  EXPECT_THROW(k.rotary_forward(qkv.data().address(), short_table.data().address(), sin.data().address(), B,
                                T, H, KV, D, R),
               InternalError);
  EXPECT_THROW(k.rotary_backward(dqkv.data().address(), cos.data().address(), short_table.data().address(), B,
                                 T, H, KV, D, R),
               InternalError);
  // KV not dividing H: the kernel's own InputError.
  EXPECT_THROW(
      k.attention_forward(out.data().address(), lse.data().address(), qkv.data().address(), B, T, 4, 3, 2),
      InputError);
}

}  // namespace
}  // namespace tz
