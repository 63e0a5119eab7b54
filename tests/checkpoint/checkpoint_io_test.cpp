// The checkpoint layer's building blocks: CRC-32C against its reference loop and a known vector,
// agreed I/O (one failing rank stops all with its message; a task longer than the collectives'
// timeout is fine within the I/O timeout; a task past the I/O timeout is named), and the pieces
// plan (every element of every state written exactly once, for every preset and world size).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "checkpoint/agreed_io.hpp"
#include "checkpoint/checkpoint_pieces.hpp"
#include "checkpoint/crc32c.hpp"
#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "engine/engine_test_util.hpp"
#include "model/parameter_layout.hpp"

namespace tz {
namespace {

TEST(Crc32c, KnownVectorAndReferenceAgreeOnAllLengthsAndAlignments) {
  const char* v = "123456789";
  EXPECT_EQ(crc32c_ref(0, v, 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(0, v, 9), 0xE3069283u);
  std::mt19937 rng(3);
  std::vector<unsigned char> data(4096 + 16);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t off = 0; off < 8; ++off)
    for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 1000, 4096}) {
      EXPECT_EQ(crc32c(0, data.data() + off, n), crc32c_ref(0, data.data() + off, n)) << off << " " << n;
      // Continuation: crc(a + b) == crc(crc(a), b).
      const std::size_t h = n / 3;
      EXPECT_EQ(crc32c(crc32c(0, data.data() + off, h), data.data() + off + h, n - h),
                crc32c_ref(0, data.data() + off, n));
    }
  std::printf("crc32c: %s\n", crc32c_hardware() ? "SSE4.2 crc32 instruction" : "table loop");
}

TEST(AgreedIo, OneFailingRankStopsEveryRankWithItsMessage) {
  std::vector<std::string> got(3);
  std::mutex mu;
  run_thread_world(3, [&](Communicator& c) {
    try {
      run_agreed_io(c, {.what = "test", .timeout_s = 30}, [&] {
        if (c.rank() == 1) fail_input("disk full writing /x/rank_00001.bin");
      });
    } catch (const InputError& e) {
      std::lock_guard lock(mu);
      got[c.rank()] = e.what();
    }
  });
  for (const auto& g : got) EXPECT_EQ(g, "rank 1: disk full writing /x/rank_00001.bin");
}

TEST(AgreedIo, ATaskLongerThanTheCollectiveTimeoutIsFineWithinTheIoTimeout) {
  CommOptions o;
  o.timeout_s = 0.3;  // every collective must finish in 0.3 s; rank 0's I/O takes 1 s
  run_thread_world(
      2,
      [&](Communicator& c) {
        run_agreed_io(c, {.what = "slow save", .timeout_s = 30}, [&] {
          if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        });
      },
      o);
}

TEST(AgreedIo, ATaskPastTheIoTimeoutIsACommErrorNamingTheRank) {
  std::vector<std::string> got(2);
  std::mutex mu;
  run_thread_world(2, [&](Communicator& c) {
    try {
      run_agreed_io(c, {.what = "checkpoint save of d/step_3", .timeout_s = 0.2}, [&] {
        if (c.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
      });
    } catch (const CommError& e) {
      std::lock_guard lock(mu);
      got[c.rank()] = e.what();
    }
  });
  for (const auto& g : got)
    EXPECT_EQ(g, "checkpoint save of d/step_3 timed out after 0.2 s; not finished: world rank(s) {1}");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the abandoned task ends
}

TEST(CheckpointPieces, EveryElementOfEveryStateIsWrittenExactlyOnce) {
  const GptConfig config = test::tiny_gpt();
  const ParameterLayout params(config);
  std::vector<RangeSpec> ranges;
  for (const auto& r : params.ranges()) ranges.push_back({r.name, r.numel});
  for (int world : {1, 2, 3, 4, 6, 8}) {
    const Topology topo = test::topology_for_world(world);
    for (const char* p : {"ddp", "zero1", "zero2", "zero3", "zeropp", "mics", "three-level"}) {
      const ShardLayout layout(ranges, topo, PartitionPlan::preset(p, topo));
      std::vector<std::vector<int>> count(3, std::vector<int>(params.total_numel(), 0));
      std::uint64_t bytes = 0, max_bytes = 0;
      for (int r = 0; r < world; ++r) {
        const RankPieces rp = pieces_written_by(layout, params, r, 64);
        std::uint64_t at = 0;
        for (const auto& piece : rp.pieces) {
          EXPECT_EQ(piece.byte_offset, at);
          at += piece.numel * 4;
          const ParamTensor& t = params.tensors()[piece.tensor];
          EXPECT_EQ(t.range, piece.range);
          EXPECT_LE(piece.begin + piece.numel, t.numel);
          for (std::uint64_t k = 0; k < piece.numel; ++k)
            ++count[static_cast<int>(piece.which)][t.offset + piece.begin + k];
        }
        EXPECT_EQ(at, rp.bytes);
        bytes += rp.bytes;
        max_bytes = std::max(max_bytes, rp.bytes);
      }
      for (int v = 0; v < 3; ++v)
        for (std::size_t i = 0; i < params.total_numel(); ++i)
          ASSERT_EQ(count[v][i], 1) << p << " at " << world << " ranks: state " << v << " element " << i;
      // Balanced: no rank writes much more than its share (ranges are cut per rank, tensors do not matter).
      EXPECT_LE(max_bytes, bytes / world + 3 * 4 * static_cast<std::uint64_t>(params.num_ranges()) * 2)
          << p << " at " << world << " ranks";
    }
  }
}

}  // namespace
}  // namespace tz
