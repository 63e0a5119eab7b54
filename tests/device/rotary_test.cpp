// Rotary position embedding (device/cpu/rotary.cpp): the fast path against the plain _ref (bitwise: both
// round the same multiplies and adds), v heads and the dims past R untouched, backward the exact
// transpose of forward (<dy, rot(x)> = <rot^T(dy), x>), the half-split pairing (q_t . k_s after rotation
// depends on t - s only, as rotary embeddings are meant to), and bad R refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "device/cpu/layers.hpp"
#include "model/kernel_threads.hpp"
#include "model/test_util.hpp"

namespace tz {
namespace {

using test::randn;

struct RotaryShape {
  int B, T, H, KV, D, R;
};

// R = D and R = D/4, head sizes not multiples of 8 (the vector width), pairs below and above 8, groups
// of 4:1, 2:1, 3:1 and 1:1.
const RotaryShape kRotaryShapes[] = {
    {2, 5, 4, 1, 12, 12}, {1, 7, 6, 3, 16, 4},   {3, 4, 3, 3, 10, 10}, {1, 9, 8, 2, 64, 16},
    {2, 6, 3, 1, 40, 40}, {1, 33, 4, 4, 36, 36}, {2, 3, 2, 1, 20, 0},
};

std::string rotary_name(const RotaryShape& s) {
  return "B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " H " + std::to_string(s.H) + " KV " +
         std::to_string(s.KV) + " D " + std::to_string(s.D) + " R " + std::to_string(s.R);
}

// cos, sin tables (T, R/2) of angle t theta^(-2j/R), as the model builds them.
struct Tables {
  std::vector<float> cos, sin;
};
Tables rotary_test_tables(int T, int R, double theta = 10000.0) {
  Tables t;
  for (int p = 0; p < T; ++p)
    for (int j = 0; j < R / 2; ++j) {
      const double angle = p * std::pow(theta, -2.0 * j / R);
      t.cos.push_back(static_cast<float>(std::cos(angle)));
      t.sin.push_back(static_cast<float>(std::sin(angle)));
    }
  return t;
}

double rotary_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

class Rotary : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_kernel_threads(GetParam()); }
  void TearDown() override { set_kernel_threads(1); }
};

TEST_P(Rotary, FastMatchesRefBitwiseAndLeavesVAndTheRestAlone) {
  for (const RotaryShape& s : kRotaryShapes) {
    const std::size_t ld = std::size_t(s.H + 2 * s.KV) * s.D, n = std::size_t(s.B) * s.T * ld;
    const Tables t = rotary_test_tables(s.T, s.R);
    const auto x = randn(n, 1);
    for (bool backward : {false, true}) {
      std::vector<float> fast = x, ref = x;
      if (backward) {
        rotary_backward(fast.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
        rotary_backward_ref(ref.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
      } else {
        rotary_forward(fast.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
        rotary_forward_ref(ref.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
      }
      EXPECT_EQ(fast, ref) << rotary_name(s) << (backward ? " backward" : " forward");
      // Untouched: v heads, dims R.. of every q and k head, and everything at position 0 (angle 0).
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t row = i / ld, col = i % ld, head = col / s.D, dim = col % s.D;
        const bool rotated = head < std::size_t(s.H + s.KV) && dim < std::size_t(s.R) && row % s.T != 0;
        if (!rotated) {
          ASSERT_EQ(fast[i], x[i]) << rotary_name(s) << " element " << i;
        }
      }
    }
  }
}

// rotary_backward is the transpose of rotary_forward: <dy, rot(x)> = <rot^T(dy), x> for random x, dy,
// and random (not unit-norm) tables too, so that it is a transpose and not merely an inverse.
TEST_P(Rotary, BackwardIsTheExactTransposeOfForward) {
  for (const RotaryShape& s : kRotaryShapes) {
    const std::size_t ld = std::size_t(s.H + 2 * s.KV) * s.D, n = std::size_t(s.B) * s.T * ld;
    const std::size_t table = std::size_t(s.T) * (s.R / 2);
    for (bool unit : {true, false}) {
      Tables t = rotary_test_tables(s.T, s.R);
      if (!unit) t = {randn(table, 5), randn(table, 6)};
      const auto x = randn(n, 3), dy = randn(n, 4);
      std::vector<float> rx = x, rtdy = dy;
      rotary_forward(rx.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
      rotary_backward(rtdy.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
      const double lhs = rotary_dot(dy, rx), rhs = rotary_dot(rtdy, x);
      EXPECT_NEAR(lhs, rhs, 1e-5 * std::sqrt(double(n)) * (1 + std::abs(lhs)))
          << rotary_name(s) << (unit ? "" : " random tables");
      // With true rotations, backward undoes forward.
      if (unit) {
        std::vector<float> back = rx;
        rotary_backward(back.data(), t.cos.data(), t.sin.data(), s.B, s.T, s.H, s.KV, s.D, s.R);
        EXPECT_LT(test::norm_err(back, x), 1e-6) << rotary_name(s);
      }
    }
  }
}

// The point of the half-split pairing: after rotation, q at position t and k at position s meet through
// a score that depends only on t - s (the same q and k placed at (t, s) and (t + 5, s + 5)).
TEST_P(Rotary, ScoresDependOnlyOnTheRelativePosition) {
  const int T = 12, H = 2, KV = 1, D = 24, R = 16;
  const std::size_t ld = std::size_t(H + 2 * KV) * D;
  const Tables t = rotary_test_tables(T, R, 500.0);
  const auto q = randn(D, 7), k = randn(D, 8);
  auto score = [&](int tq, int tk) {
    std::vector<float> qkv(T * ld, 0.0f);
    std::copy(q.begin(), q.end(), qkv.begin() + std::size_t(tq) * ld + D);                   // query head 1
    std::copy(k.begin(), k.end(), qkv.begin() + std::size_t(tk) * ld + std::size_t(H) * D);  // the k head
    rotary_forward(qkv.data(), t.cos.data(), t.sin.data(), 1, T, H, KV, D, R);
    double sum = 0;
    for (int i = 0; i < D; ++i) sum += double(qkv[tq * ld + D + i]) * qkv[tk * ld + H * D + i];
    return sum;
  };
  for (auto [tq, tk] : {std::pair{3, 1}, std::pair{6, 6}, std::pair{2, 5}}) {
    const double a = score(tq, tk), b = score(tq + 5, tk + 5);
    EXPECT_NEAR(a, b, 1e-4 * (1 + std::abs(a))) << tq << " " << tk;
  }
  EXPECT_GT(std::abs(score(3, 1) - score(4, 1)), 1e-3);  // and it does depend on t - s
}

TEST(RotaryInput, AnOddOrTooLargeRotaryWidthIsRefused) {
  std::vector<float> qkv(4 * 8 * 2), table(8);
  EXPECT_THROW(rotary_forward(qkv.data(), table.data(), table.data(), 1, 2, 2, 1, 8, 3), InputError);
  EXPECT_THROW(rotary_backward(qkv.data(), table.data(), table.data(), 1, 2, 2, 1, 8, 10), InputError);
  EXPECT_THROW(rotary_forward_ref(qkv.data(), table.data(), table.data(), 1, 2, 2, 1, 8, -2), InputError);
  EXPECT_NO_THROW(rotary_forward(qkv.data(), table.data(), table.data(), 1, 2, 2, 1, 8, 8));
}

INSTANTIATE_TEST_SUITE_P(Threads, Rotary, ::testing::Values(1, 2));

}  // namespace
}  // namespace tz
