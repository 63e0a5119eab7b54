// Faults and bad input with ranks as threads: a rank that skips a collective makes the others fail
// within the timeout with a report (op, group, sequence number, missing ranks); the debug size check
// names the disagreeing ranks and their values; an exception on one rank aborts the world at once.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "comm/thread_world.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

std::string comm_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CommError& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& s, const std::string& part) {
  EXPECT_NE(s.find(part), std::string::npos) << "'" << part << "' not in: " << s;
}

TEST(Faults, SkippedCollectiveTimesOutWithReport) {
  CommOptions opts;
  opts.timeout_s = 0.3;
  std::vector<std::string> errors(3);
  const auto t0 = std::chrono::steady_clock::now();
  run_thread_world(
      3,
      [&](Communicator& comm) {
        std::vector<float> in(4, 1.f), out(12);
        comm.all_gather(in.data(), out.data(), 4, DType::f32).wait();  // seq 1: everyone
        if (comm.rank() == 1) return;                                  // rank 1 skips seq 2
        errors[comm.rank()] =
            comm_error_of([&] { comm.all_gather(in.data(), out.data(), 4, DType::f32).wait(); });
        // The communicator is unusable afterwards: later collectives fail at once, naming the cause.
        const std::string later = comm_error_of([&] { comm.barrier().wait(); });
        expect_contains(later, "unusable after an earlier failure");
      },
      opts);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(elapsed, 5.0);
  for (int r : {0, 2}) {
    expect_contains(errors[r], "all_gather on group 'world' (seq 2");
    expect_contains(errors[r], "timed out after 0.3 s");
  }
  // Rank 2 receives from rank 1 in the ring: it names it.
  expect_contains(errors[2], "not arrived: world rank(s) {1}");
  expect_contains(errors[2], "world rank 2)");
  // Rank 0 waits for rank 2 (stuck), but both carry the same agreed culprit: rank 1, alive, not in it.
  const std::string agreed =
      "agreed by the live ranks: culprit world rank(s) {1}: world rank(s) {1} alive but not in the "
      "collective "
      "the others wait in; all_gather seq 2 on group 'world' {0,1,2} waits for {1}";
  for (int r : {0, 2}) expect_contains(errors[r], agreed);
  EXPECT_EQ(errors[0].substr(errors[0].find("agreed")), errors[2].substr(errors[2].find("agreed")));
}

TEST(Faults, CheckCollectivesCatchesADifferentOp) {
  CommOptions opts;
  opts.check_collectives = true;
  opts.timeout_s = 10;
  std::vector<std::string> errors(3);
  run_thread_world(
      3,
      [&](Communicator& comm) {
        std::vector<float> x(6, 1.f);
        errors[comm.rank()] = comm_error_of([&] {
          if (comm.rank() == 1)
            comm.broadcast(x.data(), 2, DType::f32, 0).wait();
          else
            comm.all_reduce(x.data(), x.data(), 2, DType::f32).wait();
        });
      },
      opts);
  for (const std::string& e : errors)
    expect_contains(e, "world rank 1 differs from world rank 0: broadcast count=2 dtype=f32 root=0 seq=1");
}

TEST(Faults, CrossedCollectivesAreReportedAsADesync) {
  CommOptions opts;
  opts.timeout_s = 0.3;
  std::vector<std::string> errors(2);
  run_thread_world(
      2,
      [&](Communicator& comm) {
        auto pair = comm.split(0, comm.rank(), "pair");  // the same two ranks, another group
        float x = 1;
        errors[comm.rank()] = comm_error_of([&] {
          // Rank 0 waits on the world while rank 1 waits on 'pair': each for the other.
          Communicator& mine = comm.rank() == 0 ? comm : *pair;
          mine.all_reduce(&x, &x, 1, DType::f32).wait();
        });
      },
      opts);
  for (const std::string& e : errors)
    expect_contains(e,
                    "culprit world rank(s) {0,1}: desync: world rank(s) {0,1} each wait in a collective "
                    "another has not issued");
}

TEST(Faults, CheckCollectivesNamesTheFirstDifferingRankAndBothValues) {
  CommOptions opts;
  opts.check_collectives = true;
  opts.timeout_s = 10;
  std::vector<std::string> errors(4);
  run_thread_world(
      4,
      [&](Communicator& comm) {
        const std::size_t count = comm.rank() == 2 ? 6 : 5;
        std::vector<float> x(8, 1.f);
        errors[comm.rank()] =
            comm_error_of([&] { comm.all_reduce(x.data(), x.data(), count, DType::f32).wait(); });
      },
      opts);
  // One report, the same on every rank: the first rank that differs from rank 0, both values.
  for (const std::string& e : errors) {
    expect_contains(e,
                    "collective check failed: world rank 2 differs from world rank 0: all_reduce count=6 "
                    "dtype=f32 seq=1 group=");
    expect_contains(e, " vs all_reduce count=5 dtype=f32 seq=1 group=");
    expect_contains(e, "world rank(s) {0,1,3}: all_reduce count=5 dtype=f32");
    expect_contains(e, "world rank(s) {2}: all_reduce count=6 dtype=f32");
    EXPECT_EQ(e.substr(e.find("collective check failed")),
              errors[0].substr(errors[0].find("collective check failed")));
  }
}

TEST(Faults, CheckCollectivesPassesWhenRanksAgree) {
  CommOptions opts;
  opts.check_collectives = true;
  run_thread_world(
      3,
      [&](Communicator& comm) {
        float x[3] = {1, 2, 3};
        comm.all_reduce(x, x, 3, DType::f32).wait();
        comm.broadcast(x, 3, DType::f32, 1).wait();
        EXPECT_EQ(x[2], 9.f);
      },
      opts);
}

TEST(Faults, ExceptionOnOneRankAbortsTheOthersAndIsRethrownWithItsRank) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    run_thread_world(4, [](Communicator& comm) {
      if (comm.rank() == 3) throw InputError("bad value 7 for key 'x'");
      comm.barrier().wait();  // ranks 0..2 would wait 300 s for rank 3 without the abort
    });
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "rank 3: bad value 7 for key 'x'");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(Faults, SplitGroupsAreIndependentAndShareTheLedger) {
  run_thread_world(6, [](Communicator& comm) {
    auto sub = comm.split(comm.rank() % 2, -comm.rank(), "parity");  // reversed order by key
    ASSERT_EQ(sub->size(), 3);
    EXPECT_EQ(sub->rank(), 2 - comm.rank() / 2);
    float x = float(comm.rank());
    sub->all_reduce(&x, &x, 1, DType::f32).wait();
    EXPECT_EQ(x, comm.rank() % 2 ? 9.f : 6.f);
    EXPECT_EQ(comm.ledger().snapshot().at("parity").ops, 1u);
    // stream_wait orders collectives across communicators.
    float y = 1;
    Work w = comm.all_reduce(&y, &y, 1, DType::f32);
    sub->stream_wait(w);
    float z = 0;
    sub->broadcast(&y, 1, DType::f32, 0).wait();
    (void)z;
    EXPECT_EQ(y, 6.f);
  });
}

}  // namespace
}  // namespace tz
