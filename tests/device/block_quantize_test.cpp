// Block quantizer: every ISA's kernels against the scalar reference (bitwise: codes, scales, values),
// one CTest entry per ISA x bits x block size x dtype; the named error budgets on many kinds of
// input; the NaN/inf policy and the wire format by hand on every ISA; the dispatcher (one
// validation path, forcing an ISA, refusing one the CPU lacks). An ISA this CPU cannot run is
// skipped with a message naming the features it lacks.
#include "device/cpu/block_quantize.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "support/expect_input_error.hpp"

namespace tz {

// Names for GoogleTest's parameter printing (found by argument-dependent lookup).
[[maybe_unused]] static void PrintTo(QuantIsa isa, std::ostream* os) {
  *os << quant_isa_name(isa);
}
[[maybe_unused]] static void PrintTo(QuantBits bits, std::ostream* os) {
  *os << quant_bits_name(bits);
}
[[maybe_unused]] static void PrintTo(DType dtype, std::ostream* os) {
  *os << dtype_name(dtype);
}

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

// Forces an ISA for one test and restores the process-wide choice after it.
class IsaGuard {
 public:
  explicit IsaGuard(QuantIsa isa) { set_quant_isa(isa); }
  ~IsaGuard() { set_quant_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  QuantIsa saved_ = active_quant_isa();
};

// Why `isa` cannot run here ("" when it can).
std::string unsupported_reason(QuantIsa isa) {
  if (quant_isa_supported(isa)) return "";
  const std::string missing = quant_isa_missing_features(isa, detect_quant_cpu_features());
  return missing.empty() ? fmt::format("quantizer ISA {} is not built for this target", quant_isa_name(isa))
                         : fmt::format("this CPU lacks {} (quantizer ISA {})", missing, quant_isa_name(isa));
}

#define TZ_SKIP_UNLESS_SUPPORTED(isa)                                                       \
  do {                                                                                      \
    if (const std::string why = unsupported_reason(isa); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

struct Case {
  QuantOptions opts;
  DType dtype;
  std::size_t count;
  Input input;
};

std::string describe(const Case& c, QuantIsa isa) {
  return fmt::format("isa={} bits={} block={} dtype={} count={} input={}", quant_isa_name(isa),
                     quant_bits_name(c.opts.bits), c.opts.block_size, dtype_name(c.dtype), c.count,
                     input_name(c.input));
}

const QuantBits kBits[] = {QuantBits::int8, QuantBits::int4};
const std::size_t kBlockSizes[] = {32, 64, 256, 2048};
const DType kDtypes[] = {DType::f32, DType::bf16};
// Empty, single, odd, below one block, around one block, many blocks with a partial last one.
const std::size_t kCounts[] = {0, 1, 7, 31, 33, 255, 256, 257, 1000, 4099};
const Input kInputs[] = {Input::normal,   Input::scaled_blocks, Input::constant,    Input::zeros,
                         Input::denormal, Input::huge,          Input::tiny_normal, Input::with_nonfinite};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (QuantBits bits : kBits)
    for (std::size_t block : kBlockSizes)
      for (DType dtype : kDtypes)
        for (std::size_t count : kCounts)
          for (Input input : kInputs)
            cases.push_back({{.bits = bits, .block_size = block}, dtype, count, input});
  return cases;
}

// quantize, dequantize and dequantize_add of one case on the active ISA, bitwise against _ref.
void expect_matches_reference(const Case& c, unsigned seed) {
  const QuantIsa isa = active_quant_isa();
  const auto x = as_bytes(make_input(c.input, c.count, seed), c.dtype);
  const std::size_t qbytes = quantized_bytes(c.count, c.opts);
  std::vector<std::uint8_t> q_ref(qbytes, 0xAB), q_fast(qbytes, 0xCD);
  const QuantStats s_ref = quantize_ref(x.data(), c.dtype, c.count, q_ref.data(), c.opts);
  const QuantStats s_fast = quantize(x.data(), c.dtype, c.count, q_fast.data(), c.opts);
  ASSERT_EQ(s_ref.blocks, s_fast.blocks) << describe(c, isa);
  ASSERT_EQ(s_ref.nonfinite_blocks, s_fast.nonfinite_blocks) << describe(c, isa);
  for (std::size_t i = 0; i < qbytes; ++i)
    ASSERT_EQ(q_ref[i], q_fast[i]) << describe(c, isa) << " byte " << i << " of block "
                                   << i / quant_block_bytes(c.opts) << ": expected " << int(q_ref[i])
                                   << ", got " << int(q_fast[i]);

  std::vector<std::uint8_t> y_ref(x.size(), 0x11), y_fast(x.size(), 0x22);
  dequantize_ref(q_ref.data(), c.count, y_ref.data(), c.dtype, c.opts);
  dequantize(q_ref.data(), c.count, y_fast.data(), c.dtype, c.opts);
  for (std::size_t i = 0; i < y_ref.size(); ++i)
    ASSERT_EQ(y_ref[i], y_fast[i]) << describe(c, isa) << " output byte " << i << " (element "
                                   << i / dtype_bytes(c.dtype) << ")";

  std::vector<float> acc_ref(c.count), acc_fast(c.count);
  for (std::size_t i = 0; i < c.count; ++i)
    acc_ref[i] = acc_fast[i] = 0.25f * static_cast<float>(i % 13) - 1.0f;
  dequantize_add_ref(q_ref.data(), c.count, acc_ref.data(), c.opts);
  dequantize_add(q_ref.data(), c.count, acc_fast.data(), c.opts);
  for (std::size_t i = 0; i < c.count; ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(acc_ref[i]), std::bit_cast<std::uint32_t>(acc_fast[i]))
        << describe(c, isa) << " i " << i << ": expected " << acc_ref[i] << ", got " << acc_fast[i];
}

const QuantIsa kFastIsas[] = {QuantIsa::portable, QuantIsa::avx2, QuantIsa::avx512};

// One CTest entry per ISA x bits x block size x dtype; each runs every count and input kind.
class KernelsMatchReference
    : public ::testing::TestWithParam<std::tuple<QuantIsa, QuantBits, std::size_t, DType>> {};

TEST_P(KernelsMatchReference, Bitwise) {
  const auto [isa, bits, block, dtype] = GetParam();
  TZ_SKIP_UNLESS_SUPPORTED(isa);
  IsaGuard guard(isa);
  unsigned seed = 1;
  for (std::size_t count : kCounts)
    for (Input input : kInputs) {
      expect_matches_reference({{.bits = bits, .block_size = block}, dtype, count, input}, seed++);
      if (HasFatalFailure()) return;
    }
}

std::string kernel_case_name(
    const ::testing::TestParamInfo<std::tuple<QuantIsa, QuantBits, std::size_t, DType>>& info) {
  const auto [isa, bits, block, dtype] = info.param;
  return fmt::format("{}_{}_b{}_{}", quant_isa_name(isa), quant_bits_name(bits), block, dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(Isas, KernelsMatchReference,
                         ::testing::Combine(::testing::ValuesIn(kFastIsas), ::testing::ValuesIn(kBits),
                                            ::testing::ValuesIn(kBlockSizes), ::testing::ValuesIn(kDtypes)),
                         kernel_case_name);

// Arbitrary code bytes under every kind of scale (zero of either sign, normal of either sign,
// subnormal, huge so that products overflow to inf, bf16 ties, inf, NaN): decoding is bitwise the reference's
// on input no quantizer of ours writes too (INT4 code -8, INT8 code -128, overflowing products).
class DecodeArbitraryBlocks : public ::testing::TestWithParam<QuantIsa> {};

TEST_P(DecodeArbitraryBlocks, Bitwise) {
  const QuantIsa isa = GetParam();
  TZ_SKIP_UNLESS_SUPPORTED(isa);
  IsaGuard guard(isa);
  // 0x1.03p0 = 0x3f818000 is halfway between two bf16 values with an odd last bit, and so is every
  // power-of-two code times it: those products test bf16's round-half-to-even (ties are otherwise
  // too rare for random values to hit).
  const float scales[] = {0.0f,
                          -0.0f,
                          0.37f,
                          -1.5e-3f,
                          0x1p-140f,
                          3e38f,
                          -3e38f,
                          FLT_MIN,
                          1.0f,
                          0x1.03p0f,
                          -0x1.03p0f,
                          0x1.03p-100f,
                          0x1.03p0f,
                          0x1.03p0f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 rng(7);
  for (QuantBits bits : kBits)
    for (std::size_t block : kBlockSizes)
      for (std::size_t count : kCounts) {
        const QuantOptions o{.bits = bits, .block_size = block};
        std::vector<std::uint8_t> q(quantized_bytes(count, o));
        for (auto& b : q) b = static_cast<std::uint8_t>(rng());
        for (std::size_t b = 0; b < quant_blocks(count, o); ++b)
          std::memcpy(q.data() + b * quant_block_bytes(o), &scales[(b + count) % std::size(scales)], 4);
        for (DType dtype : kDtypes) {
          const std::string what =
              fmt::format("isa={} bits={} block={} count={} dtype={}", quant_isa_name(isa),
                          quant_bits_name(bits), block, count, dtype_name(dtype));
          std::vector<std::uint8_t> y_ref(count * dtype_bytes(dtype), 1), y_fast(y_ref.size(), 2);
          dequantize_ref(q.data(), count, y_ref.data(), dtype, o);
          dequantize(q.data(), count, y_fast.data(), dtype, o);
          for (std::size_t i = 0; i < y_ref.size(); ++i)
            ASSERT_EQ(y_ref[i], y_fast[i]) << what << " output byte " << i;
        }
        std::vector<float> acc_ref(count, 0.5f), acc_fast(count, 0.5f);
        dequantize_add_ref(q.data(), count, acc_ref.data(), o);
        dequantize_add(q.data(), count, acc_fast.data(), o);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(acc_ref[i]), std::bit_cast<std::uint32_t>(acc_fast[i]))
              << "isa=" << quant_isa_name(isa) << " bits=" << quant_bits_name(bits) << " block=" << block
              << " count=" << count << " i " << i;
      }
}

std::string isa_name(const ::testing::TestParamInfo<QuantIsa>& info) {
  return std::string(quant_isa_name(info.param));
}

INSTANTIATE_TEST_SUITE_P(Isas, DecodeArbitraryBlocks, ::testing::ValuesIn(kFastIsas), isa_name);

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
        ASSERT_TRUE(std::isnan(scale)) << describe(c, QuantIsa::reference) << " block " << b;
        for (std::size_t i = lo; i < hi; ++i)
          ASSERT_TRUE(std::isnan(value_at(y, c.dtype, i))) << describe(c, QuantIsa::reference) << " i " << i;
        continue;
      }
      // The stored step is the ideal one (amax / qmax), up to fp32 rounding or, for subnormal steps,
      // one subnormal unit, and never so small that qmax codes fall short of amax.
      ASSERT_LE(std::fabs(scale - amax / qmax), amax / qmax * 1e-6 + 0x1p-149)
          << describe(c, QuantIsa::reference);
      for (std::size_t i = lo; i < hi; ++i) {
        const double xi = value_at(x, c.dtype, i), yi = value_at(y, c.dtype, i);
        ASSERT_TRUE(std::isfinite(yi)) << describe(c, QuantIsa::reference) << " i " << i;
        double budget = scale * kQuantHalfStepBudget;
        if (c.dtype == DType::bf16) budget += std::fabs(yi) * kBf16RoundingBudget + kBf16SubnormalUlp;
        ASSERT_LE(std::fabs(yi - xi), budget) << describe(c, QuantIsa::reference) << " i " << i << " x " << xi
                                              << " y " << yi << " scale " << scale;
      }
    }
    EXPECT_EQ(stats.nonfinite_blocks, nonfinite_blocks) << describe(c, QuantIsa::reference);
    EXPECT_EQ(stats.blocks, quant_blocks(c.count, c.opts));
  }
}

// The by-hand checks run on every ISA, the reference included.
class EveryIsa : public ::testing::TestWithParam<QuantIsa> {
 protected:
  void SetUp() override {
    TZ_SKIP_UNLESS_SUPPORTED(GetParam());
    guard_.emplace(GetParam());
  }
  void TearDown() override { guard_.reset(); }

 private:
  std::optional<IsaGuard> guard_;
};

INSTANTIATE_TEST_SUITE_P(Isas, EveryIsa, ::testing::ValuesIn(kAllQuantIsas), isa_name);

// Blocks whose largest element is FLT_MAX: the scale is nudged so that no code dequantizes to inf.
TEST_P(EveryIsa, LargestFloatStaysFinite) {
  for (QuantBits bits : kBits) {
    const QuantOptions o{.bits = bits, .block_size = 32};
    std::vector<float> x(40, FLT_MAX);
    for (std::size_t i = 1; i < x.size(); i += 2) x[i] = -FLT_MAX;
    std::vector<std::uint8_t> q(quantized_bytes(x.size(), o));
    quantize(x.data(), DType::f32, x.size(), q.data(), o);
    std::vector<float> y(x.size());
    dequantize(q.data(), x.size(), y.data(), DType::f32, o);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << quant_bits_name(bits) << " " << i;
      EXPECT_LE(std::fabs(double(y[i]) - x[i]), scale_of_block(q, i / 32, o) * kQuantHalfStepBudget);
    }
  }
}

TEST_P(EveryIsa, ConstantZeroAndSignedZeroBlocks) {
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
TEST_P(EveryIsa, WireFormatByHand) {
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

TEST_P(EveryIsa, NanAndInfPoisonTheirBlockOnly) {
  for (DType dtype : kDtypes) {
    const QuantOptions o{.bits = QuantBits::int8, .block_size = 32};
    std::vector<float> xf(100, 1.5f);
    xf[40] = std::numeric_limits<float>::quiet_NaN();
    xf[99] = -std::numeric_limits<float>::infinity();
    const auto x = as_bytes(xf, dtype);
    std::vector<std::uint8_t> q(quantized_bytes(100, o));
    const QuantStats s = quantize(x.data(), dtype, 100, q.data(), o);
    EXPECT_EQ(s.blocks, 4u);
    EXPECT_EQ(s.nonfinite_blocks, 2u) << dtype_name(dtype);
    std::vector<std::uint8_t> y(x.size());
    dequantize(q.data(), 100, y.data(), dtype, o);
    for (std::size_t i = 0; i < 100; ++i) {
      const bool poisoned = (i >= 32 && i < 64) || i >= 96;
      const float v = value_at(y, dtype, i);
      if (poisoned)
        EXPECT_TRUE(std::isnan(v)) << dtype_name(dtype) << " " << i;
      else
        EXPECT_EQ(v, 1.5f) << dtype_name(dtype) << " " << i;
    }
    std::vector<float> acc(100, 1.0f);
    dequantize_add(q.data(), 100, acc.data(), o);
    EXPECT_TRUE(std::isnan(acc[33]));
    EXPECT_EQ(acc[0], 2.5f);
  }
}

// One validation path: every ISA, and the _ref functions, refuse the same bad calls the same way.
TEST_P(EveryIsa, RejectsBadOptionsDtypesAndBuffers) {
  std::vector<float> x(8);
  std::vector<std::uint8_t> q(1024);
  using test::expect_input_error;
  expect_input_error([&] { quantize(x.data(), DType::f32, 8, q.data(), {.block_size = 48}); },
                     {"block_size", "48"});
  expect_input_error([&] { quantize_ref(x.data(), DType::f32, 8, q.data(), {.block_size = 0}); },
                     {"block_size", "0"});
  expect_input_error([&] { dequantize_add(q.data(), 8, x.data(), {.block_size = 1 << 17}); },
                     {"block_size", "131072"});
  expect_input_error([&] { quantize(x.data(), DType::f64, 8, q.data(), {}); }, {"quantize", "f64"});
  expect_input_error([&] { dequantize(q.data(), 8, x.data(), DType::u8, {}); }, {"dequantize", "u8"});
  expect_input_error([&] { dequantize_ref(q.data(), 8, x.data(), DType::f64, {}); }, {"dequantize", "f64"});
  expect_input_error([&] { quantize(nullptr, DType::f32, 8, q.data(), {}); }, {"quantize", "input", "8"});
  expect_input_error([&] { dequantize(q.data(), 8, nullptr, DType::bf16, {}); }, {"dequantize", "output"});
  expect_input_error([&] { dequantize_add(q.data(), 3, nullptr, {}); }, {"dequantize_add", "output", "3"});
  // Zero elements need no buffers.
  EXPECT_EQ(quantize(nullptr, DType::f32, 0, nullptr, {}).blocks, 0u);
  dequantize(nullptr, 0, nullptr, DType::bf16, {});
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

TEST(BlockQuantizeDispatch, BestIsaIsSupportedAndForcingWorks) {
  const QuantIsa best = best_quant_isa();
  EXPECT_TRUE(quant_isa_supported(best));
  EXPECT_TRUE(quant_isa_supported(QuantIsa::portable));
  EXPECT_TRUE(quant_isa_supported(QuantIsa::reference));
  // The best is the widest the CPU runs.
  if (quant_isa_supported(QuantIsa::avx512))
    EXPECT_EQ(best, QuantIsa::avx512);
  else if (quant_isa_supported(QuantIsa::avx2))
    EXPECT_EQ(best, QuantIsa::avx2);
  else
    EXPECT_EQ(best, QuantIsa::portable);
  IsaGuard guard(QuantIsa::portable);
  EXPECT_EQ(active_quant_isa(), QuantIsa::portable);
  EXPECT_EQ(select_quant_isa("reference"), QuantIsa::reference);
  EXPECT_EQ(select_quant_isa("auto"), best);
  EXPECT_EQ(active_quant_isa(), best);
}

TEST(BlockQuantizeDispatch, NamesRoundTripAndUnknownNamesAreRefused) {
  for (QuantIsa isa : kAllQuantIsas) EXPECT_EQ(parse_quant_isa(quant_isa_name(isa)), isa);
  test::expect_input_error([] { parse_quant_isa("avx3"); }, {"avx3", "avx2", "avx512"});
  const QuantIsa before = active_quant_isa();
  test::expect_input_error([] { select_quant_isa("sse9"); }, {"sse9"});
  EXPECT_EQ(active_quant_isa(), before);
}

// Refusal is decided from a feature set, so it is tested here for CPUs this one is not.
TEST(BlockQuantizeDispatch, RefusesAnIsaTheCpuLacks) {
  const QuantCpuFeatures none{};
  const QuantCpuFeatures avx2_only{.avx2 = true};
  const QuantCpuFeatures no_bf16{.avx2 = true, .avx512f = true, .avx512bw = true, .avx512vl = true};
  const QuantCpuFeatures all{
      .avx2 = true, .avx512f = true, .avx512bw = true, .avx512vl = true, .avx512bf16 = true};
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::portable, none), "");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::reference, none), "");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::avx2, none), "avx2");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::avx2, avx2_only), "");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::avx512, avx2_only), "avx512f avx512bw avx512vl avx512bf16");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::avx512, no_bf16), "avx512bf16");
  EXPECT_EQ(quant_isa_missing_features(QuantIsa::avx512, all), "");
  test::expect_input_error([&] { require_quant_isa(QuantIsa::avx512, no_bf16); },
                           {"avx512", "lacks avx512bf16"});
  test::expect_input_error([&] { require_quant_isa(QuantIsa::avx2, none); }, {"avx2", "lacks avx2"});
  require_quant_isa(QuantIsa::portable, none);
  // On this CPU: forcing an ISA it lacks is refused and changes nothing; the others are accepted.
  const QuantIsa before = active_quant_isa();
  for (QuantIsa isa : kAllQuantIsas) {
    if (quant_isa_supported(isa)) {
      IsaGuard guard(isa);
      EXPECT_EQ(active_quant_isa(), isa);
    } else {
      test::expect_input_error([&] { set_quant_isa(isa); }, {std::string(quant_isa_name(isa))});
      EXPECT_EQ(active_quant_isa(), before);
    }
  }
}

}  // namespace
}  // namespace tz
