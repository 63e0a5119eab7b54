// Bulk bf16 conversion against to_bf16 / to_float element by element, on every path this CPU can
// run: special values (signed zeros, denormals, infinities, quiet and signalling NaNs, rounding ties
// on both sides, the largest finite value that rounds to infinity), random bit patterns, every bf16
// pattern, and every length around the vector width (so each tail is covered).
#include "core/bf16_convert.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace tz {
namespace {

using Narrow = void (*)(bf16*, const float*, std::size_t);
using Widen = void (*)(float*, const bf16*, std::size_t);

struct Path {
  const char* name;
  Narrow narrow;
  Widen widen;
  bool available;
};

std::vector<Path> paths() {
  namespace d = bf16_convert_detail;
  return {{"dispatched", bf16_from_floats, floats_from_bf16, true},
          {"portable", d::bf16_from_floats_portable, d::floats_from_bf16_portable, true},
          {"avx2", d::bf16_from_floats_avx2, d::floats_from_bf16_avx2, d::have_avx2()},
          {"avx512", d::bf16_from_floats_avx512, d::floats_from_bf16_avx512, d::have_avx512()}};
}

std::vector<float> test_values() {
  const std::uint32_t specials[] = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00008000u, 0x00018000u,  // zeros, denormals, ties
      0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u,                            // ties to even, off-ties
      0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,                            // max finite, infinities
      0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff80ffffu, 0x7fffffffu};  // quiet and signalling NaNs
  std::vector<float> v;
  for (std::uint32_t s : specials) v.push_back(std::bit_cast<float>(s));
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return v;
}

TEST(Bf16Convert, NarrowingMatchesToBf16OnEveryPath) {
  const std::vector<float> in = test_values();
  for (const Path& p : paths()) {
    if (!p.available) continue;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
                          std::size_t{33}, in.size()}) {
      std::vector<bf16> out(n + 1, bf16{0xabcd});
      p.narrow(out.data(), in.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i].bits, to_bf16(in[i]).bits)
            << p.name << " n=" << n << " i=" << i << " bits=" << std::hex
            << std::bit_cast<std::uint32_t>(in[i]);
      EXPECT_EQ(out[n].bits, 0xabcd) << p.name << ": wrote past n=" << n;
    }
  }
}

TEST(Bf16Convert, WideningMatchesToFloatForEveryPatternOnEveryPath) {
  std::vector<bf16> in(65536 + 5);
  for (std::size_t i = 0; i < in.size(); ++i) in[i].bits = static_cast<std::uint16_t>(i);
  for (const Path& p : paths()) {
    if (!p.available) continue;
    for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{16}, std::size_t{31}, in.size()}) {
      std::vector<float> out(n + 1, 42.0f);
      p.widen(out.data(), in.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(to_float(in[i])))
            << p.name << " n=" << n << " i=" << i;
      EXPECT_EQ(out[n], 42.0f) << p.name << ": wrote past n=" << n;
    }
  }
}

TEST(Bf16Convert, UnalignedBuffers) {
  const std::vector<float> in = test_values();
  for (const Path& p : paths()) {
    if (!p.available) continue;
    std::vector<bf16> out(in.size());
    p.narrow(out.data() + 1, in.data() + 3, in.size() - 3);
    for (std::size_t i = 0; i + 3 < in.size(); ++i)
      ASSERT_EQ(out[i + 1].bits, to_bf16(in[i + 3]).bits) << p.name;
    std::vector<float> back(in.size());
    p.widen(back.data() + 1, out.data() + 1, in.size() - 3);
    for (std::size_t i = 0; i + 3 < in.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(back[i + 1]), std::bit_cast<std::uint32_t>(to_float(out[i + 1])))
          << p.name;
  }
}

}  // namespace
}  // namespace tz
