// The shared-memory all-gather (comm/all_gather_shared.cpp) driven directly over thread-world
// transports: uneven blocks (including empty ones), many rounds through tiny staging buffers, many
// collectives in a row on one arena (buffer reuse), in-place input, and the timeout report naming the
// rank that never published. Results must equal the ring's.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

std::byte pattern(int block, std::size_t i, int rep) {
  return std::byte(static_cast<unsigned char>(block * 31 + i * 7 + rep * 13));
}

TEST(SharedAllGather, UnevenBlocksManyRoundsManyCollectives) {
  for (bool cross : {false, true})
    for (int n : {1, 2, 3, 5, 8}) {
      on_arena(
          n, 64, 20,
          [n](int r, Collective& c, SharedArena& arena) {
            for (int rep = 0; rep < 6; ++rep) {
              // Block b has (b * 37 + rep * 11) % 300 bytes: some empty, most several 64-byte rounds.
              std::vector<std::size_t> offsets(n + 1, 0);
              for (int b = 0; b < n; ++b) offsets[b + 1] = offsets[b] + (b * 37 + rep * 11) % 300;
              std::vector<std::byte> out(offsets[n], std::byte{0xEE});
              std::vector<std::byte> own(offsets[r + 1] - offsets[r]);
              for (std::size_t i = 0; i < own.size(); ++i) own[i] = pattern(r, i, rep);
              const bool in_place = rep % 2 == 1;
              if (in_place) std::copy(own.begin(), own.end(), out.begin() + offsets[r]);
              all_gather_shared(c, arena, in_place ? out.data() + offsets[r] : own.data(), out.data(),
                                offsets);
              for (int b = 0; b < n; ++b)
                for (std::size_t i = offsets[b]; i < offsets[b + 1]; ++i)
                  ASSERT_EQ(out[i], pattern(b, i - offsets[b], rep))
                      << "n " << n << " rank " << r << " rep " << rep << " in-place reads "
                      << arena.cross_memory();
            }
          },
          {}, cross);
    }
}

TEST(SharedAllGather, RankThatNeverPublishesIsNamedAtTheDeadline) {
  for (bool cross : {false, true}) {
    const std::vector<std::string> errors = test::errors_with_an_absent_rank(
        "all_gather", 2, 1,
        [](int, Collective& c, SharedArena& arena) {
          std::vector<std::size_t> offsets = {0, 8, 16, 24};
          std::vector<std::byte> out(24), own(8);
          all_gather_shared(c, arena, own.data(), out.data(), offsets);
        },
        cross);
    for (int r : {0, 2}) {
      EXPECT_NE(errors[r].find("all_gather on group 'world' (seq 2"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("timed out after 0.3 s; not arrived: world rank(s) {1}"), std::string::npos)
          << errors[r];
    }
  }
}

}  // namespace
}  // namespace tz
