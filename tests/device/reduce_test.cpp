// The fast reduction loops against their plain references, bit for bit (including bf16 rounding,
// NaN and infinities), and the transport-level pieces the algorithms rely on.
#include "device/cpu/reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

using ReduceFn = void (*)(void*, const void*, const void*, std::size_t, DType);

// The dispatched function and each path this CPU can run, against the reference, out of place and
// in place.
template <typename T>
void compare_fast_and_ref(DType dtype, const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> ref(a.size());
  reduce_add_ref(ref.data(), a.data(), b.data(), a.size(), dtype);
  const std::pair<const char*, ReduceFn> paths[] = {{"dispatched", reduce_add},
                                                    {"portable", reduce_detail::reduce_add_portable},
                                                    {"avx2", reduce_detail::reduce_add_avx2}};
  for (const auto& [name, fn] : paths) {
    if (fn == reduce_detail::reduce_add_avx2 && !reduce_detail::have_avx2()) continue;
    std::vector<T> fast(a.size());
    fn(fast.data(), a.data(), b.data(), a.size(), dtype);
    ASSERT_EQ(std::memcmp(fast.data(), ref.data(), a.size() * sizeof(T)), 0)
        << dtype_name(dtype) << " " << name;
    std::vector<T> in_place = a;
    fn(in_place.data(), in_place.data(), b.data(), a.size(), dtype);
    ASSERT_EQ(std::memcmp(in_place.data(), ref.data(), a.size() * sizeof(T)), 0)
        << dtype_name(dtype) << " " << name << " in place";
  }
}

TEST(Reduce, FastMatchesReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 3.f);
  const std::size_t n = 1037;
  std::vector<float> a(n), b(n);
  std::vector<double> da(n), db(n);
  std::vector<bf16> ha(n), hb(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
    da[i] = a[i];
    db[i] = b[i] * 1e-3;
    ha[i] = to_bf16(a[i]);
    hb[i] = to_bf16(b[i]);
  }
  a[3] = std::numeric_limits<float>::quiet_NaN();
  ha[3] = to_bf16(std::numeric_limits<float>::quiet_NaN());
  ha[4] = to_bf16(std::numeric_limits<float>::infinity());
  hb[5] = to_bf16(3.0e38f);
  ha[5] = to_bf16(3.0e38f);  // overflows to infinity after rounding
  compare_fast_and_ref(DType::f32, a, b);
  compare_fast_and_ref(DType::f64, da, db);
  compare_fast_and_ref(DType::bf16, ha, hb);
  std::vector<bf16> out(n);
  reduce_add(out.data(), ha.data(), hb.data(), n, DType::bf16);
  EXPECT_TRUE(std::isnan(to_float(out[3])));
  EXPECT_TRUE(std::isinf(to_float(out[5])));
}

TEST(Reduce, BytesAreNotReducible) {
  std::uint8_t x[2] = {1, 2};
  EXPECT_FALSE(dtype_reducible(DType::u8));
  EXPECT_THROW(reduce_add(x, x, x, 2, DType::u8), InputError);
  EXPECT_THROW(reduce_detail::reduce_add_portable(x, x, x, 2, DType::u8), InputError);
}

}  // namespace
}  // namespace tz
