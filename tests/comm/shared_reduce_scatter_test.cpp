// The shared-memory reduce-scatter (comm/reduce_scatter_shared.cpp) driven directly over
// thread-world transports: uneven and empty blocks, many rounds through tiny staging buffers, in
// place and not, f32, bf16 and f64, at 1-8 ranks. Integer-valued inputs must give the closed-form
// sums exactly (any order); random inputs must equal, bit for bit, a plain reference that adds in
// the algorithm's documented order (own contribution, then the others in rank order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "core/bf16.hpp"
#include "core/counter_rng.hpp"
#include "device/cpu/reduce.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

// Elements of block b in repetition rep: uneven, some empty.
std::size_t block_count(int b, int rep) {
  return (b + rep) % 4 == 3 ? 0 : static_cast<std::size_t>(b * 13 + rep * 7) % 40;
}

std::vector<std::size_t> offsets_for(int p, int rep, std::size_t esz) {
  std::vector<std::size_t> off(p + 1, 0);
  for (int b = 0; b < p; ++b) off[b + 1] = off[b] + block_count(b, rep) * esz;
  return off;
}

// Value of element i of rank q's input: small integers (exact sums) or random in [-1, 1).
double input_value(bool integer, int q, std::size_t i, int rep) {
  if (integer) return double((q * 7 + int(i) * 3 + rep) % 11) - 5.0;
  return 2.0 * counter_uniform(1234 + rep, std::uint64_t(q) * 100000 + i) - 1.0;
}

void store(std::byte* at, double v, DType dtype) {
  if (dtype == DType::f32) {
    const float f = float(v);
    std::memcpy(at, &f, 4);
  } else if (dtype == DType::f64) {
    std::memcpy(at, &v, 8);
  } else {
    const bf16 h = to_bf16(float(v));
    std::memcpy(at, &h, 2);
  }
}

double load(const std::byte* at, DType dtype) {
  if (dtype == DType::f32) {
    float f;
    std::memcpy(&f, at, 4);
    return f;
  }
  if (dtype == DType::f64) {
    double d;
    std::memcpy(&d, at, 8);
    return d;
  }
  bf16 h;
  std::memcpy(&h, at, 2);
  return to_float(h);
}

std::vector<std::byte> make_input(int p, int q, int rep, DType dtype, bool integer) {
  const std::size_t esz = dtype_bytes(dtype);
  const std::vector<std::size_t> off = offsets_for(p, rep, esz);
  std::vector<std::byte> in(off[p]);
  for (std::size_t i = 0; i < off[p] / esz; ++i)
    store(in.data() + i * esz, input_value(integer, q, i, rep), dtype);
  return in;
}

TEST(SharedReduceScatter, UnevenBlocksEqualTheOrderedReferenceAndTheClosedForm) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f64})
    for (bool integer : {true, false})
      for (int n : {1, 2, 3, 4, 5, 6, 7, 8}) {
        on_arena(n, 64, 20, [&](int r, Collective& c, SharedArena& arena) {
          const std::size_t esz = dtype_bytes(dtype);
          for (int rep = 0; rep < 4; ++rep) {
            const std::vector<std::size_t> off = offsets_for(n, rep, esz);
            const std::size_t mine = off[r + 1] - off[r];
            std::vector<std::byte> in = make_input(n, r, rep, dtype, integer);
            const bool in_place = rep % 2 == 1;
            std::vector<std::byte> separate(mine, std::byte{0xEE});
            std::byte* out = in_place ? in.data() + off[r] : separate.data();
            reduce_scatter_shared(c, arena, in.data(), out, off, dtype);

            // Reference: own contribution first, then every other rank's in rank order.
            std::vector<std::byte> expect(mine);
            const std::vector<std::byte> own = make_input(n, r, rep, dtype, integer);
            if (mine > 0) std::memcpy(expect.data(), own.data() + off[r], mine);
            for (int q = 0; q < n; ++q) {
              if (q == r || mine == 0) continue;
              const std::vector<std::byte> theirs = make_input(n, q, rep, dtype, integer);
              reduce_add_ref(expect.data(), expect.data(), theirs.data() + off[r], mine / esz, dtype);
            }
            for (std::size_t i = 0; i < mine / esz; ++i) {
              const double got = load(out + i * esz, dtype);
              ASSERT_EQ(std::memcmp(out + i * esz, expect.data() + i * esz, esz), 0)
                  << dtype_name(dtype) << " n " << n << " rank " << r << " rep " << rep << " i " << i
                  << ": got " << got << " expected " << load(expect.data() + i * esz, dtype);
              if (integer) {
                double sum = 0;
                for (int q = 0; q < n; ++q) sum += input_value(true, q, off[r] / esz + i, rep);
                ASSERT_EQ(got, sum) << dtype_name(dtype) << " n " << n << " rank " << r << " i " << i;
              }
            }
          }
        });
      }
}

}  // namespace
}  // namespace tz
