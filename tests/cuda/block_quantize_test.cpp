// Block quantization of the CUDA kernel table (device/cuda/block_quantize.cu) against the cpu backend's,
// bitwise: codes, scales, padding and the bytes after the buffer, QuantStats, dequantized values (f32
// and bf16 out) and dequantize_add, for INT8 and INT4, f32 and bf16 input, block sizes 32, 256 and 4096,
// counts that leave a partial last block, and hostile blocks (NaN, +-inf, all zeros and signed zeros,
// subnormal inputs, subnormal and zero-rounding scales, values up to FLT_MAX). Decoding is also checked
// on blocks no quantizer writes (random codes under NaN, inf, -0, subnormal and overflowing scales, NaN
// and inf accumulators), on buffers that are not 4-byte aligned, and over more blocks than one grid.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "cuda/cuda_test_support.hpp"
#include "device/kernels.hpp"

namespace tz {
namespace {

constexpr QuantBits kBqBits[] = {QuantBits::int8, QuantBits::int4};
constexpr DType kBqDtypes[] = {DType::f32, DType::bf16};
constexpr std::size_t kBqBlockSizes[] = {32, 256, 4096};
constexpr std::size_t kBqCounts[] = {1, 31, 1000, 100'003};
constexpr std::uint8_t kBqFill = 0xA5;     // what output buffers hold before a kernel writes them
constexpr std::size_t kBqGuardBytes = 16;  // after every output: no kernel may write there

float bq_float(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Elements of blocks of `block`, each block of one kind (the kinds cycle, shifted by `seed` so that
// one-block counts see every kind over the matrix of cases).
std::vector<float> bq_hostile_input(std::size_t n, std::size_t block, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  // The largest magnitude the element type holds: FLT_MAX rounds to inf in bf16.
  const float largest = dtype == DType::f32 ? FLT_MAX : 0x1.fep127f;
  std::vector<float> x(n);
  for (std::size_t start = 0; start < n; start += block) {
    const std::size_t len = std::min(block, n - start);
    float* b = x.data() + start;
    const std::size_t kind = (start / block + seed) % 10;
    const std::size_t at = rng() % len;  // where a planted value goes
    for (std::size_t i = 0; i < len; ++i)
      b[i] = gauss(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 24) - 12);
    switch (kind) {
      case 0:  // plain values
        break;
      case 1:
        b[at] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 2:
        b[at] = std::numeric_limits<float>::infinity();
        break;
      case 3:  // zeros of both signs
        for (std::size_t i = 0; i < len; ++i) b[i] = i % 3 == 0 ? -0.0f : 0.0f;
        break;
      case 4:  // subnormal inputs, subnormal scale
        for (std::size_t i = 0; i < len; ++i) b[i] = gauss(rng) * 1e-41f;
        break;
      case 5:  // normal inputs, subnormal scale
        for (std::size_t i = 0; i < len; ++i) b[i] = gauss(rng) * 4e-37f;
        break;
      case 6:  // near the top of the range: the scale is nudged so that no code overflows
        for (std::size_t i = 0; i < len; ++i) b[i] = std::clamp(gauss(rng), -1.0f, 1.0f) * largest;
        b[at] = (at % 2 ? -1.0f : 1.0f) * largest;
        break;
      case 7:  // the smallest subnormals: amax / qmax rounds to 0, the scale is nudged up to 2^-149
        for (std::size_t i = 0; i < len; ++i) b[i] = i % 2 ? -0x1p-149f : (i % 5 ? 0x1p-149f : 0.0f);
        break;
      case 8:  // -inf next to a NaN with a payload, a signaling NaN: the block stores the quiet NaN
        b[at] = -std::numeric_limits<float>::infinity();
        b[(at + 1) % len] = bq_float(0x7f800001u);
        b[(at + 2) % len] = bq_float(0xffc12345u);
        break;
      case 9:  // one value repeated: every code is +-qmax; ties of x / scale at half steps
        for (std::size_t i = 0; i < len; ++i) b[i] = (i % 4 == 0 ? -1.0f : 1.0f) * (i % 2 ? 3.25f : 1.625f);
        break;
    }
  }
  return x;
}

// The elements in dtype, as bytes.
std::vector<std::uint8_t> bq_element_bytes(const std::vector<float>& x, DType dtype) {
  std::vector<std::uint8_t> out(x.size() * dtype_bytes(dtype));
  if (dtype == DType::f32) {
    if (!x.empty()) std::memcpy(out.data(), x.data(), out.size());
  } else {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bf16 h = to_bf16(x[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// Accumulators for dequantize_add: random, with NaN (quiet with a payload, signaling), +-inf sprinkled.
std::vector<float> bq_accumulators(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 4.0f);
  std::vector<float> acc(n);
  for (std::size_t i = 0; i < n; ++i) {
    acc[i] = gauss(rng);
    if (i % 97 == 3) acc[i] = bq_float(0x7fc00001u);
    if (i % 101 == 7) acc[i] = bq_float(0xff800001u);
    if (i % 89 == 11) acc[i] = (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
  }
  return acc;
}

std::vector<std::uint8_t> bq_float_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size() * 4);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A byte buffer of `bytes` + guard bytes on `dev`, at byte `offset` of its allocation, filled with kBqFill
// (or with `init` followed by the fill).
class BqBytes {
 public:
  BqBytes(Backend& dev, std::size_t bytes, std::size_t offset, const std::vector<std::uint8_t>& init = {})
      : buf_(dev, offset + bytes + kBqGuardBytes), offset_(offset) {
    std::vector<std::uint8_t> host(buf_.size(), kBqFill);
    std::copy(init.begin(), init.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
    upload(buf_, std::span<const std::uint8_t>(host));
  }
  DevicePtr<std::uint8_t> at() { return buf_.data() + offset_; }
  DevicePtr<std::byte> bytes() { return device_cast<std::byte>(at()); }
  DevicePtr<const std::byte> const_bytes() { return device_cast<const std::byte>(at()); }
  DevicePtr<float> floats() { return device_cast<float>(at()); }
  // The bytes from the offset on, guard included.
  std::vector<std::uint8_t> read() const {
    std::vector<std::uint8_t> all = download(buf_);
    return {all.begin() + static_cast<std::ptrdiff_t>(offset_), all.end()};
  }

 private:
  DeviceBuffer<std::uint8_t> buf_;
  std::size_t offset_;
};

// What one backend makes of the elements `x` (bytes of dtype): the quantized buffer, its stats, the
// values it dequantizes to (f32 and bf16) and the accumulators after dequantize_add.
struct BqOutputs {
  QuantStats stats;
  std::vector<std::uint8_t> q, y_f32, y_bf16, acc;
};

BqOutputs bq_run(Backend& dev, const std::vector<std::uint8_t>& x, std::size_t count, DType dtype,
                 const QuantOptions& opts, const std::vector<float>& acc0, std::size_t q_offset = 0) {
  Kernels& k = dev.kernels();
  BqOutputs out;
  BqBytes dx(dev, x.size(), 0, x);
  BqBytes dq(dev, quantized_bytes(count, opts), q_offset);
  out.stats = k.quantize(dq.at(), dx.const_bytes(), count, dtype, opts);
  out.q = dq.read();
  BqBytes y32(dev, count * 4, 0), y16(dev, count * 2, 0), acc(dev, count * 4, 0, bq_float_bytes(acc0));
  k.dequantize(y32.bytes(), DType::f32, dq.at(), count, opts);
  k.dequantize(y16.bytes(), DType::bf16, dq.at(), count, opts);
  k.dequantize_add(acc.floats(), dq.at(), count, opts);
  out.y_f32 = y32.read();
  out.y_bf16 = y16.read();
  out.acc = acc.read();
  return out;
}

void bq_expect_same_bytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  if (diff.first != got.end()) {
    const auto at = diff.first - got.begin();
    ADD_FAILURE() << what << ": first difference at byte " << at << " of " << got.size() << " (cuda 0x"
                  << std::hex << int{*diff.first} << ", cpu 0x" << int{*diff.second} << std::dec << ")";
  }
}

float bq_float_at(const std::vector<std::uint8_t>& bytes, std::size_t i) {
  float v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

// dequantize_add's accumulators (guard bytes included), bitwise, but for one case: where the accumulator
// `acc0` and the value (`values`, the cpu's f32 dequantization) are both NaN, x86 returns whichever
// operand the compiler put first, quieted. GCC's build of the cpu code returns the value's, and so does
// the kernel; another compiler may not, so either operand is accepted there.
void bq_expect_same_acc(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                        const std::vector<float>& acc0, const std::vector<std::uint8_t>& values,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(got.size(), acc0.size() * 4 + kBqGuardBytes) << what;
  for (std::size_t i = 0; i < acc0.size(); ++i) {
    const std::uint32_t g = std::bit_cast<std::uint32_t>(bq_float_at(got, i));
    const std::uint32_t w = std::bit_cast<std::uint32_t>(bq_float_at(want, i));
    const float v = bq_float_at(values, i);
    if (std::isnan(acc0[i]) && std::isnan(v)) {
      const std::uint32_t quiet = 0x00400000u;
      if (g != (std::bit_cast<std::uint32_t>(acc0[i]) | quiet) &&
          g != (std::bit_cast<std::uint32_t>(v) | quiet)) {
        ADD_FAILURE() << what << ": element " << i << " NaN + NaN gave 0x" << std::hex << g << std::dec;
        return;
      }
    } else if (g != w) {
      ADD_FAILURE() << what << ": first difference at element " << i << " (cuda 0x" << std::hex << g
                    << ", cpu 0x" << w << std::dec << ")";
      return;
    }
  }
  const auto guard = static_cast<std::ptrdiff_t>(acc0.size() * 4);
  EXPECT_TRUE(std::equal(got.begin() + guard, got.end(), want.begin() + guard)) << what << ": guard bytes";
}

void bq_expect_same(const BqOutputs& gpu, const BqOutputs& cpu, const std::vector<float>& acc0,
                    const std::string& what) {
  EXPECT_EQ(gpu.stats.blocks, cpu.stats.blocks) << what;
  EXPECT_EQ(gpu.stats.nonfinite_blocks, cpu.stats.nonfinite_blocks) << what;
  bq_expect_same_bytes(gpu.q, cpu.q, what + " quantized bytes");
  bq_expect_same_bytes(gpu.y_f32, cpu.y_f32, what + " dequantize f32");
  bq_expect_same_bytes(gpu.y_bf16, cpu.y_bf16, what + " dequantize bf16");
  bq_expect_same_acc(gpu.acc, cpu.acc, acc0, cpu.y_f32, what + " dequantize_add");
}

class CudaBlockQuantize : public ::testing::Test {
 protected:
  void SetUp() override { TZ_REQUIRE_CUDA(); }
  Backend& gpu() { return backend(DeviceKind::cuda); }
  Backend& cpu() { return backend(DeviceKind::cpu); }
};

TEST_F(CudaBlockQuantize, HostileInputsAreBitwiseTheCpus) {
  unsigned seed = 1;
  for (QuantBits bits : kBqBits)
    for (DType dtype : kBqDtypes)
      for (std::size_t block : kBqBlockSizes)
        for (std::size_t count : kBqCounts) {
          ++seed;
          const QuantOptions opts{.bits = bits, .block_size = block};
          const std::vector<std::uint8_t> x =
              bq_element_bytes(bq_hostile_input(count, block, dtype, seed), dtype);
          const std::vector<float> acc = bq_accumulators(count, seed);
          const std::string what = fmt::format("bits={} dtype={} block={} count={}", quant_bits_name(bits),
                                               dtype_name(dtype), block, count);
          const BqOutputs want = bq_run(cpu(), x, count, dtype, opts, acc);
          const BqOutputs got = bq_run(gpu(), x, count, dtype, opts, acc);
          EXPECT_EQ(got.stats.blocks, quant_blocks(count, opts)) << what;
          bq_expect_same(got, want, acc, what);
        }
}

// The largest and smallest block sizes, every block of a kind the quantizer must get exactly right.
TEST_F(CudaBlockQuantize, LargestBlockAndManyNonfiniteBlocks) {
  for (QuantBits bits : kBqBits) {
    // Block kinds 4, 5, 6 (subnormal, subnormal scale, huge), then 9, 0, 1 (repeated, plain, NaN).
    const QuantOptions big{.bits = bits, .block_size = kMaxQuantBlockSize};
    const std::size_t count = 3 * kMaxQuantBlockSize - 77;
    for (unsigned seed : {4u, 9u}) {
      const std::vector<std::uint8_t> x =
          bq_element_bytes(bq_hostile_input(count, kMaxQuantBlockSize, DType::f32, seed), DType::f32);
      const std::vector<float> acc = bq_accumulators(count, seed);
      bq_expect_same(bq_run(gpu(), x, count, DType::f32, big, acc),
                     bq_run(cpu(), x, count, DType::f32, big, acc), acc,
                     fmt::format("bits={} block=65536 seed={}", quant_bits_name(bits), seed));
    }

    // Every other block of 32 holds a NaN: the count is the device's atomic one.
    const QuantOptions small{.bits = bits, .block_size = 32};
    std::vector<float> y = bq_hostile_input(20'000, 32, DType::bf16, 7);
    for (std::size_t i = 0; i < y.size(); i += 64) y[i + 5] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<std::uint8_t> yb = bq_element_bytes(y, DType::bf16);
    const std::vector<float> acc_small = bq_accumulators(y.size(), 8);
    const BqOutputs got = bq_run(gpu(), yb, y.size(), DType::bf16, small, acc_small);
    const BqOutputs want = bq_run(cpu(), yb, y.size(), DType::bf16, small, acc_small);
    EXPECT_GE(got.stats.nonfinite_blocks, y.size() / 64);
    bq_expect_same(got, want, acc_small,
                   fmt::format("bits={} block=32, NaN every other block", quant_bits_name(bits)));
  }
}

// Quantized buffers at offsets 1, 2 and 3 bytes from an aligned address: the kernels fall back to byte
// accesses and write the same bytes.
TEST_F(CudaBlockQuantize, UnalignedQuantizedBuffers) {
  const std::size_t count = 5'000;
  for (QuantBits bits : kBqBits)
    for (std::size_t offset = 1; offset <= 3; ++offset) {
      const QuantOptions opts{.bits = bits, .block_size = 96};
      const std::vector<std::uint8_t> x =
          bq_element_bytes(bq_hostile_input(count, 96, DType::bf16, 9), DType::bf16);
      const std::vector<float> acc = bq_accumulators(count, 10);
      bq_expect_same(bq_run(gpu(), x, count, DType::bf16, opts, acc, offset),
                     bq_run(cpu(), x, count, DType::bf16, opts, acc, 0), acc,
                     fmt::format("bits={} q offset {}", quant_bits_name(bits), offset));
    }
}

// Blocks no quantizer of ours writes: random code bytes (INT4 -8, INT8 -128) under every kind of scale,
// NaN payloads and signaling NaNs included, decoded onto NaN and inf accumulators. The GPU's own NaN
// results differ from x86's; the kernels must give the CPU's.
TEST_F(CudaBlockQuantize, DecodesArbitraryBlocksAsTheCpuDoes) {
  const std::uint32_t scales[] = {0x00000000u,
                                  0x80000000u,
                                  0x3ebd70a4u /* 0.37 */,
                                  0xbac49ba6u /* -1.5e-3 */,
                                  0x00000800u /* 2^-138 */,
                                  0x7f61b1e6u /* 3e38 */,
                                  0xff61b1e6u,
                                  0x00800000u,
                                  0x3f818000u /* bf16 ties */,
                                  0xbf818000u,
                                  0x0d818000u,
                                  0x7f800000u,
                                  0xff800000u,
                                  0x7fc00000u,
                                  0x7fc12345u,
                                  0xffc00000u,
                                  0x7f800001u,
                                  0x00000001u};
  std::mt19937 rng(11);
  for (QuantBits bits : kBqBits)
    for (std::size_t block : kBqBlockSizes)
      for (std::size_t count : kBqCounts) {
        const QuantOptions opts{.bits = bits, .block_size = block};
        std::vector<std::uint8_t> q(quantized_bytes(count, opts));
        for (auto& b : q) b = static_cast<std::uint8_t>(rng());
        for (std::size_t b = 0; b < quant_blocks(count, opts); ++b)
          std::memcpy(q.data() + b * quant_block_bytes(opts), &scales[(b + count) % std::size(scales)], 4);
        const std::vector<float> acc0 = bq_accumulators(count, static_cast<unsigned>(count + block));
        std::vector<std::uint8_t> results[2][3];
        for (int side = 0; side < 2; ++side) {
          Backend& dev = side == 0 ? gpu() : cpu();
          Kernels& k = dev.kernels();
          BqBytes dq(dev, q.size(), 0, q);
          BqBytes y32(dev, count * 4, 0), y16(dev, count * 2, 0),
              acc(dev, count * 4, 0, bq_float_bytes(acc0));
          k.dequantize(y32.bytes(), DType::f32, dq.at(), count, opts);
          k.dequantize(y16.bytes(), DType::bf16, dq.at(), count, opts);
          k.dequantize_add(acc.floats(), dq.at(), count, opts);
          results[side][0] = y32.read();
          results[side][1] = y16.read();
          results[side][2] = acc.read();
        }
        const std::string what =
            fmt::format("bits={} block={} count={}", quant_bits_name(bits), block, count);
        bq_expect_same_bytes(results[0][0], results[1][0], what + " dequantize f32");
        bq_expect_same_bytes(results[0][1], results[1][1], what + " dequantize bf16");
        bq_expect_same_acc(results[0][2], results[1][2], acc0, results[1][0], what + " dequantize_add");
      }
}

// More blocks than the quantizer's grid (65535 * 16 thread blocks): the grid-stride loop. The elements
// repeat a random stretch whose length is no multiple of the block (cheap to make for 2^25 elements).
TEST_F(CudaBlockQuantize, MoreBlocksThanOneGrid) {
  const QuantOptions opts{.bits = QuantBits::int4, .block_size = 32};
  const std::size_t count = (std::size_t{65'535} * 16 + 1'001) * 32 + 7;
  const std::vector<std::uint8_t> stretch =
      bq_element_bytes(bq_hostile_input(4'099, 4'099, DType::bf16, 10), DType::bf16);
  std::vector<bf16> x(count);
  for (std::size_t i = 0; i < count; i += 4'099)
    std::memcpy(x.data() + i, stretch.data(), std::min<std::size_t>(4'099, count - i) * 2);
  x[40] = x[count - 3] = to_bf16(std::numeric_limits<float>::quiet_NaN());  // the second and the last block
  std::vector<std::uint8_t> q[2];
  QuantStats stats[2];
  for (int side = 0; side < 2; ++side) {
    Backend& dev = side == 0 ? gpu() : cpu();
    DeviceBuffer<bf16> dx(dev, count);
    upload(dx, std::span<const bf16>(x));
    DeviceBuffer<std::uint8_t> dq(dev, quantized_bytes(count, opts));
    stats[side] = dev.kernels().quantize(dq.data(), as_bytes(DevicePtr<const bf16>(dx.data())), count,
                                         DType::bf16, opts);
    q[side] = download(dq);
  }
  EXPECT_EQ(stats[0].blocks, quant_blocks(count, opts));
  EXPECT_EQ(stats[1].blocks, quant_blocks(count, opts));
  EXPECT_EQ(stats[0].nonfinite_blocks, stats[1].nonfinite_blocks);
  EXPECT_GE(stats[1].nonfinite_blocks, 2u);
  bq_expect_same_bytes(q[0], q[1], "quantized bytes");
}

TEST_F(CudaBlockQuantize, RefusesWhatTheCpuRefuses) {
  Kernels& k = gpu().kernels();
  BqBytes x(gpu(), 1024, 0), q(gpu(), 1024, 0);
  EXPECT_THROW(k.quantize(q.at(), x.const_bytes(), 8, DType::f32, {.block_size = 48}), InputError);
  EXPECT_THROW(k.dequantize(x.bytes(), DType::f32, q.at(), 8, {.block_size = 0}), InputError);
  EXPECT_THROW(k.dequantize_add(x.floats(), q.at(), 8, {.block_size = std::size_t{1} << 17}), InputError);
  EXPECT_THROW(k.quantize(q.at(), x.const_bytes(), 8, DType::f64, {}), std::exception);
  EXPECT_THROW(k.dequantize(x.bytes(), DType::u8, q.at(), 8, {}), std::exception);
  // Zero elements: nothing written, no blocks.
  EXPECT_EQ(k.quantize(q.at(), x.const_bytes(), 0, DType::f32, {}).blocks, 0u);
  k.dequantize(x.bytes(), DType::bf16, q.at(), 0, {});
  k.dequantize_add(x.floats(), q.at(), 0, {});
  EXPECT_EQ(q.read(), std::vector<std::uint8_t>(1024 + kBqGuardBytes, kBqFill));
}

}  // namespace
}  // namespace tz
