// The shared-memory broadcast (comm/broadcast_shared.cpp) driven directly over thread-world
// transports: every root, sizes from 0 bytes to many rounds of tiny staging buffers (a round spans
// every rank's buffer), many broadcasts in a row on one arena, at 1-8 ranks; results equal the
// binomial tree's. A root that never publishes is named by every reader at the deadline.
#include <gtest/gtest.h>

#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

std::byte pattern(int root, std::size_t i, std::size_t bytes) {
  return std::byte(static_cast<unsigned char>(root * 41 + i * 13 + bytes));
}

TEST(SharedBroadcast, EveryRootEverySizeMatchesBinomial) {
  for (bool cross : {false, true})
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8}) {
      on_arena(
          n, 64, 20,
          [n](int r, Collective& c, SharedArena& arena) {
            for (std::size_t bytes : {0, 1, 63, 64, 65, 64 * 8 + 1, 3000}) {
              for (int root = 0; root < n; ++root) {
                std::vector<std::byte> shared(bytes, std::byte{0xEE}), tree(bytes, std::byte{0xDD});
                if (r == root)
                  for (std::size_t i = 0; i < bytes; ++i) shared[i] = tree[i] = pattern(root, i, bytes);
                broadcast_shared(c, arena, shared.data(), bytes, root);
                for (std::size_t i = 0; i < bytes; ++i)
                  ASSERT_EQ(shared[i], pattern(root, i, bytes))
                      << "n " << n << " rank " << r << " root " << root << " bytes " << bytes << " i " << i;
                broadcast_binomial(c, tree.data(), bytes, root);
                ASSERT_EQ(shared, tree) << "n " << n << " rank " << r << " root " << root << " bytes "
                                        << bytes << " in-place reads " << arena.cross_memory();
              }
            }
          },
          {}, cross);
    }
}

TEST(SharedBroadcast, RootThatNeverPublishesIsNamedAtTheDeadline) {
  // The root (rank 2) opens the arena, then skips the broadcast.
  for (bool cross : {false, true}) {
    const std::vector<std::string> errors = test::errors_with_an_absent_rank(
        "broadcast", 3, 2,
        [](int, Collective& c, SharedArena& arena) {
          std::vector<std::byte> buf(100);
          broadcast_shared(c, arena, buf.data(), buf.size(), 2);
        },
        cross);
    for (int r : {0, 1}) {
      EXPECT_NE(errors[r].find("broadcast on group 'world' (seq 3"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("not arrived: world rank(s) {2}"), std::string::npos) << errors[r];
    }
  }
}

}  // namespace
}  // namespace tz
