// Block quantizer: the fast paths against the scalar reference (bitwise: codes, scales, values), the
// named error budgets on many kinds of input, the NaN/inf policy, and the wire format by hand.
#include "quant/block_quantize.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

enum class Input { normal, scaled_blocks, constant, zeros, denormal, huge, tiny_normal, with_nonfinite };

const char* input_name(Input k) {
  switch (k) {
    case Input::normal:
      return "normal";
    case Input::scaled_blocks:
      return "scaled_blocks";
    case Input::constant:
      return "constant";
    case Input::zeros:
      return "zeros";
    case Input::denormal:
      return "denormal";
    case Input::huge:
      return "huge";
    case Input::tiny_normal:
      return "tiny_normal";
    case Input::with_nonfinite:
      return "with_nonfinite";
  }
  return "?";
}

std::vector<float> make_input(Input kind, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float g = gauss(rng);
    switch (kind) {
      case Input::normal:
        x[i] = g;
        break;
      case Input::scaled_blocks:
        x[i] = g * std::ldexp(1.0f, static_cast<int>(i / 37 % 40) - 20);
        break;
      case Input::constant:
        x[i] = -3.25f;
        break;
      case Input::zeros:
        x[i] = (i % 3 == 0) ? -0.0f : 0.0f;
        break;
      case Input::denormal:
        x[i] = g * 1e-41f;
        break;  // subnormal fp32 (and bf16)
      case Input::huge:
        x[i] = std::clamp(g, -1.0f, 1.0f) * 0x1.fep127f;
        break;  // up to bf16's largest
      case Input::tiny_normal:
        x[i] = g * 4e-37f;
        break;  // normal values, subnormal scale
      case Input::with_nonfinite:
        x[i] = g;
        if (i % 101 == 5) x[i] = std::numeric_limits<float>::quiet_NaN();
        if (i % 211 == 17) x[i] = (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
        break;
    }
  }
  return x;
}

std::vector<std::uint8_t> as_bytes(const std::vector<float>& x, DType dtype) {
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

float value_at(const std::vector<std::uint8_t>& buf, DType dtype, std::size_t i) {
  if (dtype == DType::f32) {
    float v;
    std::memcpy(&v, buf.data() + 4 * i, 4);
    return v;
  }
  bf16 h;
  std::memcpy(&h, buf.data() + 2 * i, 2);
  return to_float(h);
}

float scale_of_block(const std::vector<std::uint8_t>& q, std::size_t b, const QuantOptions& o) {
  float s;
  std::memcpy(&s, q.data() + b * quant_block_bytes(o), 4);
  return s;
}

// Restores the process-wide path after a test that forces one.
struct PathGuard {
  QuantPath saved = active_quant_path();
  ~PathGuard() { set_quant_path(saved); }
};

std::vector<QuantPath> fast_paths() {
  std::vector<QuantPath> paths{QuantPath::portable};
  if (quant_path_supported(QuantPath::avx512)) paths.push_back(QuantPath::avx512);
  return paths;
}

struct Case {
  QuantOptions opts;
  DType dtype;
  std::size_t count;
  Input input;
};

std::string describe(const Case& c, QuantPath p) {
  return fmt::format("path={} bits={} block={} dtype={} count={} input={}", quant_path_name(p),
                     quant_bits_name(c.opts.bits), c.opts.block_size, dtype_name(c.dtype), c.count,
                     input_name(c.input));
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (QuantBits bits : {QuantBits::int8, QuantBits::int4})
    for (std::size_t block : {32, 64, 256, 2048})
      for (DType dtype : {DType::f32, DType::bf16})
        for (std::size_t count : {0, 1, 7, 31, 33, 255, 256, 257, 1000, 4099})
          for (Input input : {Input::normal, Input::scaled_blocks, Input::constant, Input::zeros,
                              Input::denormal, Input::huge, Input::tiny_normal, Input::with_nonfinite})
            cases.push_back({{.bits = bits, .block_size = block}, dtype, count, input});
  return cases;
}

TEST(BlockQuantize, FastPathsMatchReferenceBitwise) {
  PathGuard guard;
  for (QuantPath path : fast_paths()) {
    set_quant_path(path);
    unsigned seed = 1;
    for (const Case& c : all_cases()) {
      const auto x = as_bytes(make_input(c.input, c.count, seed++), c.dtype);
      const std::size_t qbytes = quantized_bytes(c.count, c.opts);
      std::vector<std::uint8_t> q_ref(qbytes, 0xAB), q_fast(qbytes, 0xCD);
      const QuantStats s_ref = quantize_ref(x.data(), c.dtype, c.count, q_ref.data(), c.opts);
      const QuantStats s_fast = quantize(x.data(), c.dtype, c.count, q_fast.data(), c.opts);
      ASSERT_EQ(s_ref.blocks, s_fast.blocks) << describe(c, path);
      ASSERT_EQ(s_ref.nonfinite_blocks, s_fast.nonfinite_blocks) << describe(c, path);
      for (std::size_t i = 0; i < qbytes; ++i)
        ASSERT_EQ(q_ref[i], q_fast[i])
            << describe(c, path) << " byte " << i << " of block " << i / quant_block_bytes(c.opts);

      std::vector<std::uint8_t> y_ref(x.size(), 0x11), y_fast(x.size(), 0x22);
      dequantize_ref(q_ref.data(), c.count, y_ref.data(), c.dtype, c.opts);
      dequantize(q_ref.data(), c.count, y_fast.data(), c.dtype, c.opts);
      ASSERT_TRUE(y_ref == y_fast) << describe(c, path);

      std::vector<float> acc_ref(c.count), acc_fast(c.count);
      for (std::size_t i = 0; i < c.count; ++i)
        acc_ref[i] = acc_fast[i] = 0.25f * static_cast<float>(i % 13) - 1.0f;
      dequantize_add_ref(q_ref.data(), c.count, acc_ref.data(), c.opts);
      dequantize_add(q_ref.data(), c.count, acc_fast.data(), c.opts);
      for (std::size_t i = 0; i < c.count; ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(acc_ref[i]), std::bit_cast<std::uint32_t>(acc_fast[i]))
            << describe(c, path) << " i " << i;
    }
  }
}

// Every element of a finite block within the named budget of its block's stored scale; non-finite
// blocks come back all NaN; dequantize_add adds exactly the dequantized values.
TEST(BlockQuantize, ErrorWithinBudget) {
  unsigned seed = 1000;
  for (const Case& c : all_cases()) {
    const auto xf = make_input(c.input, c.count, seed++);
    const auto x = as_bytes(xf, c.dtype);
    std::vector<std::uint8_t> q(quantized_bytes(c.count, c.opts));
    const QuantStats stats = quantize_ref(x.data(), c.dtype, c.count, q.data(), c.opts);
    std::vector<std::uint8_t> y(x.size());
    dequantize_ref(q.data(), c.count, y.data(), c.dtype, c.opts);
    const int qmax = quant_qmax(c.opts.bits);
    std::size_t nonfinite_blocks = 0;
    for (std::size_t b = 0; b * c.opts.block_size < c.count; ++b) {
      const std::size_t lo = b * c.opts.block_size, hi = std::min(c.count, lo + c.opts.block_size);
      const float scale = scale_of_block(q, b, c.opts);
      double amax = 0;
      bool finite = true;
      for (std::size_t i = lo; i < hi; ++i) {
        const float xi = value_at(x, c.dtype, i);
        finite = finite && std::isfinite(xi);
        if (std::isfinite(xi)) amax = std::max(amax, std::fabs(static_cast<double>(xi)));
      }
      if (!finite) {
        ++nonfinite_blocks;
        ASSERT_TRUE(std::isnan(scale)) << describe(c, QuantPath::reference) << " block " << b;
        for (std::size_t i = lo; i < hi; ++i)
          ASSERT_TRUE(std::isnan(value_at(y, c.dtype, i))) << describe(c, QuantPath::reference) << " i " << i;
        continue;
      }
      // The stored step is the ideal one (amax / qmax), up to fp32 rounding or, for subnormal steps,
      // one subnormal unit, and never so small that qmax codes fall short of amax.
      ASSERT_LE(std::fabs(scale - amax / qmax), amax / qmax * 1e-6 + 0x1p-149)
          << describe(c, QuantPath::reference);
      for (std::size_t i = lo; i < hi; ++i) {
        const double xi = value_at(x, c.dtype, i), yi = value_at(y, c.dtype, i);
        ASSERT_TRUE(std::isfinite(yi)) << describe(c, QuantPath::reference) << " i " << i;
        double budget = scale * kQuantHalfStepBudget;
        if (c.dtype == DType::bf16) budget += std::fabs(yi) * kBf16RoundingBudget + kBf16SubnormalUlp;
        ASSERT_LE(std::fabs(yi - xi), budget) << describe(c, QuantPath::reference) << " i " << i << " x "
                                              << xi << " y " << yi << " scale " << scale;
      }
    }
    EXPECT_EQ(stats.nonfinite_blocks, nonfinite_blocks) << describe(c, QuantPath::reference);
    EXPECT_EQ(stats.blocks, quant_blocks(c.count, c.opts));
  }
}

// Blocks whose largest element is FLT_MAX: the scale is nudged so that no code dequantizes to inf.
TEST(BlockQuantize, LargestFloatStaysFinite) {
  PathGuard guard;
  for (QuantPath path : fast_paths()) {
    set_quant_path(path);
    for (QuantBits bits : {QuantBits::int8, QuantBits::int4}) {
      const QuantOptions o{.bits = bits, .block_size = 32};
      std::vector<float> x(40, FLT_MAX);
      for (std::size_t i = 1; i < x.size(); i += 2) x[i] = -FLT_MAX;
      std::vector<std::uint8_t> q(quantized_bytes(x.size(), o));
      quantize(x.data(), DType::f32, x.size(), q.data(), o);
      std::vector<float> y(x.size());
      dequantize(q.data(), x.size(), y.data(), DType::f32, o);
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << quant_path_name(path) << " " << i;
        EXPECT_LE(std::fabs(double(y[i]) - x[i]), scale_of_block(q, i / 32, o) * kQuantHalfStepBudget);
      }
    }
  }
}

TEST(BlockQuantize, ConstantZeroAndSignedZeroBlocks) {
  const QuantOptions o{.bits = QuantBits::int4, .block_size = 32};
  std::vector<float> x(64, 0.0f);
  x[3] = -0.0f;
  for (std::size_t i = 32; i < 64; ++i) x[i] = 2.5f;
  std::vector<std::uint8_t> q(quantized_bytes(64, o));
  quantize(x.data(), DType::f32, 64, q.data(), o);
  EXPECT_EQ(scale_of_block(q, 0, o), 0.0f);
  EXPECT_EQ(scale_of_block(q, 1, o), 2.5f / 7);
  std::vector<float> y(64, 9.0f);
  dequantize(q.data(), 64, y.data(), DType::f32, o);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(std::bit_cast<std::uint32_t>(y[i]), 0u) << i;  // +0
  for (std::size_t i = 32; i < 64; ++i) EXPECT_NEAR(y[i], 2.5f, 1e-6) << i;
}

// The wire format by hand: header scale, INT8 two's complement codes, INT4 nibbles (even element in
// the low nibble), zero padding, round-half-even of codes.
TEST(BlockQuantize, WireFormatByHand) {
  const std::vector<float> x{7.0f, -7.0f, 3.5f, 2.5f, -1.0f};  // amax 7
  {
    const QuantOptions o{.bits = QuantBits::int4, .block_size = 32};
    std::vector<std::uint8_t> q(quantized_bytes(x.size(), o), 0xFF);
    ASSERT_EQ(q.size(), 4u + 16u);
    quantize(x.data(), DType::f32, x.size(), q.data(), o);
    EXPECT_EQ(scale_of_block(q, 0, o), 1.0f);
    // codes 7, -7, 4 (3.5 rounds half to even), 2 (2.5 likewise), -1, then zero padding
    EXPECT_EQ(q[4], 0x97);  // low 7, high -7 = 0x9
    EXPECT_EQ(q[5], 0x24);  // low 4, high 2
    EXPECT_EQ(q[6], 0x0F);  // low -1, high padding 0
    for (std::size_t i = 7; i < q.size(); ++i) EXPECT_EQ(q[i], 0) << i;
  }
  {
    const QuantOptions o{.bits = QuantBits::int8, .block_size = 32};
    std::vector<std::uint8_t> q(quantized_bytes(x.size(), o), 0xFF);
    ASSERT_EQ(q.size(), 4u + 32u);
    quantize(x.data(), DType::f32, x.size(), q.data(), o);
    EXPECT_EQ(scale_of_block(q, 0, o), 7.0f / 127);
    EXPECT_EQ(static_cast<std::int8_t>(q[4]), 127);
    EXPECT_EQ(static_cast<std::int8_t>(q[5]), -127);
    EXPECT_EQ(static_cast<std::int8_t>(q[8]), -18);  // -1 * 127 / 7 = -18.14
    for (std::size_t i = 9; i < q.size(); ++i) EXPECT_EQ(q[i], 0) << i;
  }
}

TEST(BlockQuantize, NanAndInfPoisonTheirBlockOnly) {
  PathGuard guard;
  for (QuantPath path : fast_paths()) {
    set_quant_path(path);
    for (DType dtype : {DType::f32, DType::bf16}) {
      const QuantOptions o{.bits = QuantBits::int8, .block_size = 32};
      std::vector<float> xf(100, 1.5f);
      xf[40] = std::numeric_limits<float>::quiet_NaN();
      xf[99] = -std::numeric_limits<float>::infinity();
      const auto x = as_bytes(xf, dtype);
      std::vector<std::uint8_t> q(quantized_bytes(100, o));
      const QuantStats s = quantize(x.data(), dtype, 100, q.data(), o);
      EXPECT_EQ(s.blocks, 4u);
      EXPECT_EQ(s.nonfinite_blocks, 2u) << quant_path_name(path);
      std::vector<std::uint8_t> y(x.size());
      dequantize(q.data(), 100, y.data(), dtype, o);
      for (std::size_t i = 0; i < 100; ++i) {
        const bool poisoned = (i >= 32 && i < 64) || i >= 96;
        const float v = value_at(y, dtype, i);
        if (poisoned)
          EXPECT_TRUE(std::isnan(v)) << quant_path_name(path) << " " << i;
        else
          EXPECT_EQ(v, 1.5f) << quant_path_name(path) << " " << i;
      }
      std::vector<float> acc(100, 1.0f);
      dequantize_add(q.data(), 100, acc.data(), o);
      EXPECT_TRUE(std::isnan(acc[33]));
      EXPECT_EQ(acc[0], 2.5f);
    }
  }
}

TEST(BlockQuantize, BytesFormula) {
  const QuantOptions q8{.bits = QuantBits::int8, .block_size = 256};
  const QuantOptions q4{.bits = QuantBits::int4, .block_size = 256};
  EXPECT_EQ(quantized_bytes(0, q8), 0u);
  EXPECT_EQ(quantized_bytes(1, q8), 260u);
  EXPECT_EQ(quantized_bytes(256, q8), 260u);
  EXPECT_EQ(quantized_bytes(257, q8), 520u);
  EXPECT_EQ(quantized_bytes(257, q4), 264u);
  // The ratios the collectives rely on: INT8 (B+4)/(2B) and INT4 (B/2+4)/(2B) of bf16 bytes.
  EXPECT_LE(quantized_bytes(1 << 20, q8) / double(2 << 20), 0.53);
  EXPECT_LE(quantized_bytes(1 << 20, q4) / double(2 << 20), 0.28);
}

TEST(BlockQuantize, RejectsBadOptionsAndDtypes) {
  std::vector<float> x(8);
  std::vector<std::uint8_t> q(1024);
  EXPECT_THROW(quantize(x.data(), DType::f32, 8, q.data(), {.block_size = 48}), InputError);
  EXPECT_THROW(quantize(x.data(), DType::f32, 8, q.data(), {.block_size = 0}), InputError);
  EXPECT_THROW(quantize(x.data(), DType::f64, 8, q.data(), {}), InputError);
  EXPECT_THROW(dequantize(q.data(), 8, x.data(), DType::u8, {}), InputError);
  try {
    validate_quant_options({.block_size = 100});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("block_size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
  }
}

TEST(BlockQuantize, DispatchPicksSupportedPath) {
  EXPECT_TRUE(quant_path_supported(best_quant_path()));
  EXPECT_TRUE(quant_path_supported(QuantPath::portable));
  PathGuard guard;
  set_quant_path(QuantPath::portable);
  EXPECT_EQ(active_quant_path(), QuantPath::portable);
}

}  // namespace
}  // namespace tz
