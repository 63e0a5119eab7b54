// The shared-memory all-to-all (comm/all_to_all_shared.cpp) driven directly over thread-world
// transports: uneven and empty blocks, many rounds through tiny staging buffers, many collectives in
// a row on one arena, at 1-8 ranks; results equal the closed form and the pairwise exchange's. A
// rank that never publishes is named at the deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

// Bytes rank i sends to rank j in repetition rep: uneven, about one pair in five empty.
std::size_t pair_bytes(int i, int j, int rep) {
  if ((i + 2 * j + rep) % 5 == 0) return 0;
  return static_cast<std::size_t>(i * 37 + j * 11 + rep * 23) % 200;
}

std::byte pattern(int from, int to, std::size_t k, int rep) {
  return std::byte(static_cast<unsigned char>(from * 53 + to * 29 + k * 7 + rep * 3));
}

struct Layout {
  std::vector<std::size_t> send, recv;  // offsets, p + 1 each
  std::size_t largest = 0;              // over every rank's blocks
};

Layout layout(int p, int r, int rep) {
  Layout l;
  l.send.assign(p + 1, 0);
  l.recv.assign(p + 1, 0);
  for (int j = 0; j < p; ++j) {
    l.send[j + 1] = l.send[j] + pair_bytes(r, j, rep);
    l.recv[j + 1] = l.recv[j] + pair_bytes(j, r, rep);
  }
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) l.largest = std::max(l.largest, pair_bytes(i, j, rep));
  return l;
}

TEST(SharedAllToAll, UnevenAndEmptyBlocksManyRoundsMatchPairwise) {
  for (bool cross : {false, true})
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8}) {
      on_arena(
          n, 64, 20,
          [n](int r, Collective& c, SharedArena& arena) {
            for (int rep = 0; rep < 5; ++rep) {
              const Layout l = layout(n, r, rep);
              std::vector<std::byte> send(l.send[n]), shared(l.recv[n], std::byte{0xEE}), pairwise(l.recv[n]);
              for (int j = 0; j < n; ++j)
                for (std::size_t k = 0; k < l.send[j + 1] - l.send[j]; ++k)
                  send[l.send[j] + k] = pattern(r, j, k, rep);
              all_to_all_shared(c, arena, send.data(), l.send, shared.data(), l.recv, l.largest);
              for (int i = 0; i < n; ++i)
                for (std::size_t k = 0; k < l.recv[i + 1] - l.recv[i]; ++k)
                  ASSERT_EQ(shared[l.recv[i] + k], pattern(i, r, k, rep))
                      << "n " << n << " rank " << r << " from " << i << " byte " << k << " rep " << rep;
              all_to_all_pairwise(c, send.data(), l.send, pairwise.data(), l.recv);
              ASSERT_EQ(shared, pairwise) << "n " << n << " rank " << r << " rep " << rep
                                          << " in-place reads " << arena.cross_memory();
            }
          },
          {}, cross);
    }
}

TEST(SharedAllToAll, CountZeroMovesNothing) {
  for (bool cross : {false, true})
    for (int n : {1, 2, 5, 8})
      on_arena(
          n, 256, 20,
          [n](int, Collective& c, SharedArena& arena) {
            const std::vector<std::size_t> off(n + 1, 0);
            std::byte dummy{};
            all_to_all_shared(c, arena, &dummy, off, &dummy, off, 0);
            EXPECT_EQ(dummy, std::byte{});
          },
          {}, cross);
}

// In place, a receiver checks the length its peer offers against the one it expects.
TEST(SharedAllToAll, InPlaceLengthMismatchNamesTheRank) {
  if (!test::cross_memory_available()) GTEST_SKIP() << "process_vm_readv is not allowed here";
  const std::vector<std::string> errors = test::errors_with_an_absent_rank(
      "all_to_all", 4, -1,
      [](int r, Collective& c, SharedArena& arena) {
        // Rank 0 sends 8 bytes to rank 1, which expects 4 from it; the other pairs agree.
        std::vector<std::size_t> send = {0, 8, 16, 24}, recv = {0, 8, 16, 24};
        if (r == 0) send = {0, 8, 16, 24};
        if (r == 1) recv = {0, 4, 12, 20};
        std::vector<std::byte> s(24), d(24);
        all_to_all_shared(c, arena, s.data(), send, d.data(), recv, 8);
      },
      true);
  EXPECT_NE(errors[1].find("rank 0 offers 8 bytes where 4 are expected"), std::string::npos) << errors[1];
}

TEST(SharedAllToAll, RankThatNeverPublishesIsNamedAtTheDeadline) {
  for (bool cross : {false, true}) {
    const std::vector<std::string> errors = test::errors_with_an_absent_rank(
        "all_to_all", 2, 1,
        [](int, Collective& c, SharedArena& arena) {
          const std::vector<std::size_t> off = {0, 8, 16, 24};
          std::vector<std::byte> send(24), recv(24);
          all_to_all_shared(c, arena, send.data(), off, recv.data(), off, 8);
        },
        cross);
    for (int r : {0, 2}) {
      EXPECT_NE(errors[r].find("all_to_all on group 'world' (seq 2"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("timed out after 0.3 s; not arrived: world rank(s) {1}"), std::string::npos)
          << errors[r];
    }
  }
}

}  // namespace
}  // namespace tz
