// gemm against gemm_ref for every kernel this CPU runs (each ISA its own test case), over the four
// transpose cases, edge sizes that leave partial MR x NR tiles and K slices, alpha/beta/bias and the
// row sums (under a tolerance on random inputs, bit for bit on small-integer inputs, where every order
// of summation is exact); and the property the parity tests lean on: the result is bitwise the same
// for any thread count; and op(B) from bf16 storage equals the product of its widened fp32 copy.
#include "device/cpu/gemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"
#include "support/gemm_isa_test.hpp"

namespace tz {
namespace {

using test::norm_err;
using test::randn;

constexpr double kGemmVsRef = 2e-6;  // fp32 sums in another order vs fp64 sums

struct Shape {
  bool ta, tb;
  int M, N, K;
};

// Partial tiles (M, N not multiples of 4/6/12 and 16/32), K past one slice (384), N past one packed
// block (1024), 1-element sizes and K = 0.
const Shape kShapes[] = {
    {false, false, 1, 1, 1},    {false, true, 37, 29, 45},   {true, false, 37, 29, 45},
    {true, true, 37, 29, 45},   {false, true, 13, 1100, 17}, {false, false, 50, 33, 800},
    {true, false, 70, 47, 391}, {false, true, 200, 64, 128}, {true, true, 5, 3, 1},
    {false, false, 7, 9, 0},    {false, true, 256, 40, 60},  {true, false, 44, 35, 20},
};

using Gemm = test::GemmIsaTest;

GemmArgs args_for(const Shape& s, const std::vector<float>& A, const std::vector<float>& B, float* C,
                  const float* bias, float* sums, float alpha, float beta) {
  return {.trans_a = s.ta,
          .trans_b = s.tb,
          .M = s.M,
          .N = s.N,
          .K = s.K,
          .alpha = alpha,
          .A = A.data(),
          .lda = (s.ta ? s.M : s.K) + 3,
          .B = B.data(),
          .ldb = (s.tb ? s.K : s.N) + 2,
          .beta = beta,
          .C = C,
          .ldc = s.N + 5,
          .bias = bias,
          .a_row_sums = sums};
}

TEST_P(Gemm, MatchesRefOnEveryTransposeAndEdgeShape) {
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (const Shape& s : kShapes) {
      const std::string what = "shape " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                               std::to_string(s.K) + (s.ta ? " A^T" : "") + (s.tb ? " B^T" : "") +
                               ", threads " + std::to_string(threads);
      const auto A = randn(static_cast<std::size_t>(s.M + 3) * (s.K + 3), 1);
      const auto B = randn(static_cast<std::size_t>(s.N + 2) * (s.K + 2), 2);
      const auto bias = randn(s.N, 3);
      const std::size_t c_size = static_cast<std::size_t>(s.M) * (s.N + 5);
      for (float beta : {0.0f, 1.0f, -0.5f}) {
        // beta = 0 must ignore what C held: fill it with NaN there.
        std::vector<float> C = beta == 0.0f ? std::vector<float>(c_size, std::nanf("")) : randn(c_size, 4);
        std::vector<float> C_ref = C, sums = randn(s.M, 5), sums_ref = sums;
        gemm(args_for(s, A, B, C.data(), bias.data(), sums.data(), 0.75f, beta));
        gemm_ref(args_for(s, A, B, C_ref.data(), bias.data(), sums_ref.data(), 0.75f, beta));
        for (int i = 0; i < s.M; ++i)  // the padding columns of C are never written
          for (int j = s.N; j < s.N + 5; ++j)
            ASSERT_TRUE(std::isnan(C[i * (s.N + 5) + j]) || beta != 0.0f) << what;
        for (std::size_t i = 0; i < c_size; ++i)
          if (static_cast<int>(i % (s.N + 5)) >= s.N) C[i] = C_ref[i] = 0.0f;
        EXPECT_LT(norm_err(C, C_ref), kGemmVsRef) << what << ", beta " << beta;
        EXPECT_LT(norm_err(sums, sums_ref), kGemmVsRef) << what << ": row sums";
      }
      // No bias, no sums, alpha 1.
      std::vector<float> C(c_size, 0.0f), C_ref(c_size, 0.0f);
      gemm(args_for(s, A, B, C.data(), nullptr, nullptr, 1.0f, 0.0f));
      gemm_ref(args_for(s, A, B, C_ref.data(), nullptr, nullptr, 1.0f, 0.0f));
      EXPECT_LT(norm_err(C, C_ref), kGemmVsRef) << what << ", plain";
    }
  }
}

// Small integers: every product and partial sum is exact in fp32, so any summation order gives the
// exact result and the kernel must equal gemm_ref bit for bit (a misplaced or missed element of a
// packed panel, edge tile or K slice shows as a wrong bit, not as an error under a tolerance).
std::vector<float> small_ints(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(gen() % 9) - 4);
  return v;
}

TEST_P(Gemm, EqualsRefBitwiseOnExactInputs) {
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    for (const Shape& s : kShapes) {
      const auto A = small_ints(static_cast<std::size_t>(s.M + 3) * (s.K + 3), 1);
      const auto B = small_ints(static_cast<std::size_t>(s.N + 2) * (s.K + 2), 2);
      const auto bias = small_ints(s.N, 3);
      const std::size_t c_size = static_cast<std::size_t>(s.M) * (s.N + 5);
      for (float beta : {0.0f, 1.0f, -0.5f}) {
        std::vector<float> C = small_ints(c_size, 4), C_ref = C, sums = small_ints(s.M, 5), sums_ref = sums;
        gemm(args_for(s, A, B, C.data(), bias.data(), sums.data(), 0.5f, beta));
        gemm_ref(args_for(s, A, B, C_ref.data(), bias.data(), sums_ref.data(), 0.5f, beta));
        EXPECT_EQ(C, C_ref) << s.M << "x" << s.N << "x" << s.K << " beta " << beta << ", " << threads
                            << " threads";
        EXPECT_EQ(sums, sums_ref) << s.M << "x" << s.N << "x" << s.K << ": row sums";
      }
    }
  }
}

// op(B) stored in bf16 (as the sharded engine gathers weights in bf16 mode) is widened exactly while
// it is packed, so the product is bitwise the one of the widened fp32 matrix, on every transpose case
// and edge shape; gemm_ref reads it the same way.
TEST_P(Gemm, Bf16BEqualsItsWidenedFp32Bitwise) {
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    for (const Shape& s : kShapes) {
      const auto A = randn(static_cast<std::size_t>(s.M + 3) * (s.K + 3), 1);
      const auto B = randn(static_cast<std::size_t>(s.N + 2) * (s.K + 2), 2);
      std::vector<bf16> B16(B.size());
      std::vector<float> widened(B.size());
      for (std::size_t i = 0; i < B.size(); ++i) {
        B16[i] = to_bf16(B[i]);
        widened[i] = to_float(B16[i]);
      }
      const auto bias = randn(s.N, 3);
      const std::size_t c_size = static_cast<std::size_t>(s.M) * (s.N + 5);
      const std::string what = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) +
                               (s.tb ? " B^T" : "") + ", " + std::to_string(threads) + " threads";
      for (float beta : {0.0f, 1.0f}) {
        std::vector<float> C = randn(c_size, 4), C16 = C, C_ref = C, C16_ref = C;
        std::vector<float> sums = randn(s.M, 5), sums16 = sums;
        gemm(args_for(s, A, widened, C.data(), bias.data(), sums.data(), 0.75f, beta));
        GemmArgs g16 = args_for(s, A, widened, C16.data(), bias.data(), sums16.data(), 0.75f, beta);
        g16.B = nullptr;
        g16.B16 = B16.data();
        gemm(g16);
        EXPECT_EQ(C16, C) << what << ", beta " << beta;
        EXPECT_EQ(sums16, sums) << what << ": row sums";
        gemm_ref(args_for(s, A, widened, C_ref.data(), bias.data(), nullptr, 0.75f, beta));
        g16.C = C16_ref.data();
        g16.a_row_sums = nullptr;
        gemm_ref(g16);
        EXPECT_EQ(C16_ref, C_ref) << what << ": gemm_ref";
      }
    }
  }
}

TEST(GemmArgsCheck, BothFp32AndBf16BIsRefused) {
  std::vector<float> A(4, 1.0f), B(4, 1.0f), C(4);
  std::vector<bf16> B16(4);
  const GemmArgs g{.M = 2,
                   .N = 2,
                   .K = 2,
                   .A = A.data(),
                   .lda = 2,
                   .B = B.data(),
                   .B16 = B16.data(),
                   .ldb = 2,
                   .C = C.data(),
                   .ldc = 2};
  EXPECT_THROW(gemm(g), InternalError);
}

TEST_P(Gemm, ResultDoesNotDependOnTheThreadCount) {
  const Shape s{true, false, 300, 150, 900};
  const auto A = randn(static_cast<std::size_t>(s.M + 3) * (s.K + 3), 1);
  const auto B = randn(static_cast<std::size_t>(s.N + 2) * (s.K + 2), 2);
  const auto bias = randn(s.N, 3);
  std::vector<float> first, first_sums;
  for (int threads : {1, 2, 3, 4}) {
    set_kernel_threads(threads);
    std::vector<float> C = randn(static_cast<std::size_t>(s.M) * (s.N + 5), 4), sums(s.M, 0.0f);
    gemm(args_for(s, A, B, C.data(), bias.data(), sums.data(), 1.0f, 1.0f));
    if (first.empty()) {
      first = C;
      first_sums = sums;
      continue;
    }
    EXPECT_EQ(C, first) << threads << " threads";
    EXPECT_EQ(sums, first_sums) << threads << " threads";
  }
}

// A row of C is the same bits whichever tile computes it: a full MR-row tile, or an edge tile of
// fewer rows (the AVX-512 kernel runs those with fewer accumulators). Rows 0 .. m - 1 of an m-row
// product must equal the same rows of a product of 2 MR rows, for every m up to 12, on both
// transposes of A.
TEST_P(Gemm, EdgeTileRowsEqualFullTileRowsBitwise) {
  for (bool ta : {false, true}) {
    const Shape full{ta, false, 24, 45, 400};
    const auto A = randn(static_cast<std::size_t>(full.M + 3) * (full.K + 3), 1);
    const auto B = randn(static_cast<std::size_t>(full.N + 2) * (full.K + 2), 2);
    const auto bias = randn(full.N, 3);
    const std::size_t ldc = full.N + 5;
    std::vector<float> C_full(full.M * ldc, 0.0f);
    gemm(args_for(full, A, B, C_full.data(), bias.data(), nullptr, 0.75f, 0.0f));
    for (int m = 1; m <= 12; ++m) {
      GemmArgs g = args_for(full, A, B, nullptr, bias.data(), nullptr, 0.75f, 0.0f);
      std::vector<float> C(m * ldc, 0.0f);
      g.M = m;  // same lda: for A^T the first m columns of the same storage
      g.C = C.data();
      gemm(g);
      EXPECT_TRUE(std::equal(C.begin(), C.end(), C_full.begin())) << m << " rows" << (ta ? ", A^T" : "");
    }
  }
}

TEST(GemmIsaChoice, BestIsSupportedAndNamesAreDistinct) {
  EXPECT_TRUE(gemm_isa_supported(best_gemm_isa()));
  EXPECT_TRUE(gemm_isa_supported(GemmIsa::portable));
  EXPECT_NE(gemm_isa_name(GemmIsa::avx2), gemm_isa_name(GemmIsa::avx512));
}

INSTANTIATE_TEST_SUITE_P(Isas, Gemm, test::kEveryGemmIsa, test::gemm_isa_case_name);

}  // namespace
}  // namespace tz
