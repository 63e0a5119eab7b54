// The pair-ring all-to-all (comm/all_to_all_pair_rings.cpp) driven directly over thread-world
// transports at 1-8 ranks: uneven and empty blocks through rings of a few bytes (many chunks per
// block, rings wrapping many times), many calls in a row on one arena and calls mixed with the
// arena's round-based collectives, with and without injected delays; results equal a plain
// reference (each block copied from the sender's buffer) and the pairwise exchange's; a receiver
// that arrives calls behind its sender still gets each call's block. A length that differs from the
// receiver's is named, so is a block the sender left empty, and so is a rank that never arrives.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

// Bytes rank i sends rank j in repetition rep: uneven, about one pair in four empty, some blocks
// several times a ring's length.
std::size_t ring_pair_bytes(int i, int j, int rep) {
  if ((3 * i + j + rep) % 4 == 0) return 0;
  return static_cast<std::size_t>(i * 131 + j * 17 + rep * 59) % 700;
}

std::byte ring_pattern(int from, int to, std::size_t k, int rep) {
  return std::byte(static_cast<unsigned char>(from * 31 + to * 71 + k * 13 + rep * 5 + k / 256));
}

struct RingLayout {
  std::vector<std::size_t> send, recv;  // offsets, p + 1 each
  std::size_t largest = 0;
};

RingLayout ring_layout(int p, int r, int rep) {
  RingLayout l;
  l.send.assign(p + 1, 0);
  l.recv.assign(p + 1, 0);
  for (int j = 0; j < p; ++j) {
    l.send[j + 1] = l.send[j] + ring_pair_bytes(r, j, rep);
    l.recv[j + 1] = l.recv[j] + ring_pair_bytes(j, r, rep);
  }
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) l.largest = std::max(l.largest, ring_pair_bytes(i, j, rep));
  return l;
}

std::vector<std::byte> ring_send_buffer(int p, int r, int rep, const RingLayout& l) {
  std::vector<std::byte> send(l.send[p]);
  for (int j = 0; j < p; ++j)
    for (std::size_t k = 0; k < l.send[j + 1] - l.send[j]; ++k)
      send[l.send[j] + k] = ring_pattern(r, j, k, rep);
  return send;
}

// The reference: block i of rank r's output is what rank i sends r.
void expect_received(int p, int r, int rep, const RingLayout& l, const std::vector<std::byte>& got) {
  for (int i = 0; i < p; ++i)
    for (std::size_t k = 0; k < l.recv[i + 1] - l.recv[i]; ++k)
      ASSERT_EQ(got[l.recv[i] + k], ring_pattern(i, r, k, rep))
          << "p " << p << " rank " << r << " from " << i << " byte " << k << " rep " << rep;
}

void run_pair_rings(int p, std::size_t slot_bytes, DelayInjection delays) {
  on_arena(
      p, slot_bytes, 30,
      [p](int r, Collective& c, SharedArena& arena) {
        for (int rep = 0; rep < 6; ++rep) {
          const RingLayout l = ring_layout(p, r, rep);
          const std::vector<std::byte> send = ring_send_buffer(p, r, rep, l);
          std::vector<std::byte> rings(l.recv[p], std::byte{0xEE}), pairwise(l.recv[p]);
          all_to_all_pair_rings(c, arena, send.data(), l.send, rings.data(), l.recv);
          expect_received(p, r, rep, l, rings);
          all_to_all_pairwise(c, send.data(), l.send, pairwise.data(), l.recv);
          ASSERT_EQ(rings, pairwise) << "p " << p << " rank " << r << " rep " << rep;
        }
      },
      delays);
}

TEST(PairRingAllToAll, UnevenAndEmptyBlocksThroughTinyRingsAtOneToEightRanks) {
  for (int p = 1; p <= 8; ++p) run_pair_rings(p, 64, {});
}

TEST(PairRingAllToAll, LargerRingsAndInjectedDelays) {
  for (int p : {2, 3, 5, 8}) {
    run_pair_rings(p, 4096, {});
    run_pair_rings(p, 256, DelayInjection{.seed = std::uint64_t(p), .max_us = 200});
  }
}

// Calls back to back skip the group-wide wait; calls after a round-based collective take it. Both
// must leave the other collectives' data intact.
TEST(PairRingAllToAll, MixedWithRoundBasedCollectivesOnOneArena) {
  for (int p : {2, 4, 7})
    on_arena(p, 128, 30, [p](int r, Collective& c, SharedArena& arena) {
      for (int rep = 0; rep < 4; ++rep) {
        const RingLayout l = ring_layout(p, r, rep);
        const std::vector<std::byte> send = ring_send_buffer(p, r, rep, l);
        std::vector<std::byte> got(l.recv[p]);
        all_to_all_pair_rings(c, arena, send.data(), l.send, got.data(), l.recv);
        expect_received(p, r, rep, l, got);
        std::fill(got.begin(), got.end(), std::byte{0});
        all_to_all_shared(c, arena, send.data(), l.send, got.data(), l.recv, l.largest);
        expect_received(p, r, rep, l, got);
        std::fill(got.begin(), got.end(), std::byte{0});
        all_to_all_pair_rings(c, arena, send.data(), l.send, got.data(), l.recv);
        expect_received(p, r, rep, l, got);
        // An all-gather of 300 bytes per rank: several rounds through both staging buffers.
        std::vector<std::byte> own(300, std::byte(r + rep)), all(300 * p);
        all_gather_shared(c, arena, own.data(), all.data(), uniform_block_offsets(300, p));
        for (int q = 0; q < p; ++q)
          ASSERT_EQ(all[300 * q + 299], std::byte(q + rep)) << "all-gather from " << q;
      }
    });
}

TEST(PairRingAllToAll, CountZeroMovesNothing) {
  for (int p : {1, 2, 5, 8})
    on_arena(p, 256, 20, [p](int, Collective& c, SharedArena& arena) {
      const std::vector<std::size_t> off(p + 1, 0);
      std::byte dummy{};
      for (int rep = 0; rep < 3; ++rep) all_to_all_pair_rings(c, arena, &dummy, off, &dummy, off);
      EXPECT_EQ(dummy, std::byte{});
    });
}

TEST(PairRingAllToAll, LengthMismatchNamesTheSender) {
  const std::vector<std::string> errors =
      test::errors_with_an_absent_rank("all_to_all", 4, -1, [](int r, Collective& c, SharedArena& arena) {
        // Rank 0 sends 8 bytes to rank 1, which expects 4 from it; the other pairs agree.
        std::vector<std::size_t> send = {0, 8, 16, 24}, recv = {0, 8, 16, 24};
        if (r == 1) recv = {0, 4, 12, 20};
        std::vector<std::byte> s(24), d(24);
        all_to_all_pair_rings(c, arena, s.data(), send, d.data(), recv);
      });
  EXPECT_NE(errors[1].find("rank 0 sends 8 bytes where 4 are expected"), std::string::npos) << errors[1];
}

// A sender may finish calls while its receiver has not yet started the first (its blocks wait in
// the ring, and the receiver sends it nothing). Rank 1 arrives late; meanwhile rank 0 runs calls 0-2
// and starts call 3, so the header of its block of call 0 must still be there when rank 1 reads it.
TEST(PairRingAllToAll, ReceiverArrivingCallsBehindItsSender) {
  const std::size_t to_1[] = {10, 0, 20, 30, 0, 40}, to_0[] = {0, 0, 0, 5, 0, 7};
  on_arena(2, 64, 30, [&](int r, Collective& c, SharedArena& arena) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int call = 0; call < 6; ++call) {
      const std::size_t out = r == 0 ? to_1[call] : to_0[call], in = r == 0 ? to_0[call] : to_1[call];
      const std::vector<std::size_t> send =
          r == 0 ? std::vector<std::size_t>{0, 0, out} : std::vector<std::size_t>{0, out, out};
      const std::vector<std::size_t> recv =
          r == 0 ? std::vector<std::size_t>{0, 0, in} : std::vector<std::size_t>{0, in, in};
      std::vector<std::byte> s(out), d(in, std::byte{0xEE});
      for (std::size_t k = 0; k < out; ++k) s[k] = ring_pattern(r, 1 - r, k, call);
      all_to_all_pair_rings(c, arena, s.data(), send, d.data(), recv);
      for (std::size_t k = 0; k < in; ++k)
        ASSERT_EQ(d[k], ring_pattern(1 - r, r, k, call)) << "rank " << r << " call " << call << " byte " << k;
    }
  });
}

// Rank 0 leaves its block for rank 1 empty in the first call, where rank 1 expects 8 bytes, and
// sends 8 in the second: rank 1 must not take the second call's block for the first's.
TEST(PairRingAllToAll, BlockLeftEmptyBySenderIsNamed) {
  const std::vector<std::string> errors =
      test::errors_with_an_absent_rank("all_to_all", 4, -1, [](int r, Collective& c, SharedArena& arena) {
        std::vector<std::byte> s(24), d(24);
        for (int call = 0; call < 2; ++call) {
          std::vector<std::size_t> send = {0, 8, 16, 24}, recv = {0, 8, 16, 24};
          if (r == 0 && call == 0) send = {0, 8, 8, 16};  // nothing for rank 1
          all_to_all_pair_rings(c, arena, s.data(), send, d.data(), recv);
        }
      });
  EXPECT_NE(errors[1].find("rank 0 sends no block in this call where 8 bytes are expected"),
            std::string::npos)
      << errors[1];
}

TEST(PairRingAllToAll, RankThatNeverArrivesIsNamedAtTheDeadline) {
  const std::vector<std::string> errors =
      test::errors_with_an_absent_rank("all_to_all", 2, 1, [](int, Collective& c, SharedArena& arena) {
        const std::vector<std::size_t> off = {0, 8, 16, 24};
        std::vector<std::byte> send(24), recv(24);
        all_to_all_pair_rings(c, arena, send.data(), off, recv.data(), off);
      });
  for (int r : {0, 2}) {
    EXPECT_NE(errors[r].find("all_to_all on group 'world' (seq 2"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("timed out after 0.3 s; not arrived: world rank(s) {1}"), std::string::npos)
        << errors[r];
  }
}

}  // namespace
}  // namespace tz
