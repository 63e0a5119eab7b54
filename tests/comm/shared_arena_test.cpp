// The shared-memory arena (comm/shared_arena.cpp): nothing stays in /dev/shm, whether set-up
// succeeds, times out, or the world is aborted in the middle of it, or a rank fails before its
// first collective; the start-up sweep removes segments of dead processes only; and all four
// shared-memory collectives interleaved on one arena (tiny staging buffers, many rounds, buffer
// reuse across kinds) give exact results, with and without injected delays; and waits poll long only
// while the host (all its ranks, not the group's) has a core per rank.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/shared_arena.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/thread_transport.hpp"
#include "core/counter_rng.hpp"
#include "core/error.hpp"
#include "support/shared_arena_harness.hpp"

namespace tz {
namespace {

using test::on_arena;

// This process's segments (every rank of a thread world is this process).
std::vector<std::string> our_segments() {
  std::vector<std::string> out;
  const std::string prefix = "tierzero-" + std::to_string(getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path().filename().string());
  return out;
}

// Runs open() on ranks 0..n-1 except those for which `joins` is false; returns each rank's error.
std::vector<std::string> open_on(int n, double timeout_s, const std::function<bool(int)>& joins,
                                 const std::function<void(const ThreadWorldHandle&, int)>& instead = {}) {
  ThreadWorldHandle world = make_thread_world(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  const std::string group = "world";
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (!joins(r)) {
        if (instead) instead(world, r);
        return;
      }
      try {
        Workspace ws;
        Collective c(*world.transports[r], ws, "all_to_all", group, 1, timeout_s, 1 << 20);
        auto arena = SharedArena::open(c, 1 << 16);
        if (arena == nullptr) errors[r] = "no arena";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

TEST(SharedArena, UnlinkedOnceEveryRankHasMappedIt) {
  for (int n : {1, 2, 3, 8}) {
    on_arena(n, 256, 20, [](int, Collective& c, SharedArena& arena) {
      // Every rank has returned from open(): the name must already be gone, the memory still shared.
      EXPECT_EQ(our_segments(), std::vector<std::string>{});
      std::vector<std::byte> buf(1000, std::byte{7});
      broadcast_shared(c, arena, buf.data(), buf.size(), 0);
    });
  }
}

TEST(SharedArena, NothingLeftWhenARankNeverJoinsSetUp) {
  for (int absent : {0, 1, 2}) {
    const auto errors = open_on(3, 0.3, [&](int r) { return r != absent; });
    for (int r = 0; r < 3; ++r) {
      if (r == absent) continue;
      EXPECT_NE(errors[r].find("timed out after 0.3 s"), std::string::npos) << errors[r];
    }
    EXPECT_EQ(our_segments(), std::vector<std::string>{}) << "absent rank " << absent;
  }
}

TEST(SharedArena, NothingLeftWhenTheDeadlineHasAlreadyPassed) {
  for (int n : {2, 4}) {
    open_on(n, 0.0, [](int) { return true; });  // every wait times out at once (or just completes)
    EXPECT_EQ(our_segments(), std::vector<std::string>{}) << n << " ranks";
  }
}

TEST(SharedArena, NothingLeftWhenTheWorldIsAbortedDuringSetUp) {
  const auto errors = open_on(
      3, 30, [](int r) { return r != 1; },
      [](const ThreadWorldHandle& world, int) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others are in set-up
        world.abort("rank 1 failed");
      });
  for (int r : {0, 2}) EXPECT_NE(errors[r].find("aborted: rank 1 failed"), std::string::npos) << errors[r];
  EXPECT_EQ(our_segments(), std::vector<std::string>{});
}

TEST(SharedArena, NothingLeftWhenARankFailsBeforeItsFirstCollective) {
  for (int failing : {0, 2}) {
    EXPECT_THROW(run_thread_world(4,
                                  [&](Communicator& comm) {
                                    if (comm.rank() == failing) throw InputError("bad input on this rank");
                                    std::vector<float> x(4 * 4), y(4 * 4);
                                    comm.all_to_all(x.data(), y.data(), 4, DType::f32).wait();
                                  }),
                 InputError);
    EXPECT_EQ(our_segments(), std::vector<std::string>{}) << "failing rank " << failing;
  }
}

// A pid that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

void create_segment(const std::string& name) {
  const int fd = shm_open(("/" + name).c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name;
  close(fd);
}

bool segment_exists(const std::string& name) {
  return std::filesystem::exists("/dev/shm/" + name);
}

TEST(SharedArena, SweepRemovesSegmentsOfDeadProcessesOnly) {
  const std::string dead = "tierzero-" + std::to_string(dead_pid()) + "-0-0badc0de";
  const std::string alive = "tierzero-" + std::to_string(getpid()) + "-4242-00000000";
  const std::string not_a_pid = "tierzero-x1-0-00000000";
  const std::string other_program = "othertool-" + std::to_string(dead_pid()) + "-0";
  for (const auto& n : {dead, alive, not_a_pid, other_program}) create_segment(n);
  const std::vector<std::string> removed = sweep_stale_shared_segments();
  EXPECT_NE(std::find(removed.begin(), removed.end(), dead), removed.end());
  EXPECT_FALSE(segment_exists(dead));
  for (const auto& n : {alive, not_a_pid, other_program}) {
    EXPECT_TRUE(segment_exists(n)) << n;
    EXPECT_EQ(std::find(removed.begin(), removed.end(), n), removed.end()) << n;
    shm_unlink(("/" + n).c_str());
  }
}

// A seeded sequence of collectives, the same on every rank: kind, sizes and root vary, so staging
// buffers are reused across kinds (a broadcast writes every rank's buffer of its round's parity).
void mixed_collectives(int r, Collective& c, SharedArena& arena, int p) {
  for (int step = 0; step < 40; ++step) {
    const std::uint64_t h = splitmix64(std::uint64_t(step) * 7919 + p);
    const int kind = int(h % 4);
    const std::size_t count = (h >> 8) % 50;  // floats per block
    const int root = int((h >> 20) % p);
    const std::size_t block = count * 4;
    const std::vector<std::size_t> off = uniform_block_offsets(block, p);
    std::vector<float> send(count * p), recv(count * p, -1.f);
    auto value = [&](int q, std::size_t i) { return float(q * 1000 + int(i) + step); };
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(r, i);
    auto* s = reinterpret_cast<std::byte*>(send.data());
    auto* d = reinterpret_cast<std::byte*>(recv.data());
    if (kind == 0) {
      all_gather_shared(c, arena, s, d, off);  // own block = first `count` of send
      for (int q = 0; q < p; ++q)
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(recv[q * count + i], value(q, i)) << "all_gather step " << step << " rank " << r;
    } else if (kind == 1) {
      all_to_all_shared(c, arena, s, off, d, off, block);
      for (int q = 0; q < p; ++q)
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(recv[q * count + i], value(q, r * count + i))
              << "all_to_all step " << step << " rank " << r;
    } else if (kind == 2) {
      broadcast_shared(c, arena, s, block * p, root);
      for (std::size_t i = 0; i < send.size(); ++i)
        ASSERT_EQ(send[i], value(root, i)) << "broadcast step " << step << " rank " << r;
    } else {
      reduce_scatter_shared(c, arena, s, d, off, DType::f32);
      for (std::size_t i = 0; i < count; ++i) {
        float sum = 0;
        for (int q = 0; q < p; ++q) sum += value(q, r * count + i);
        ASSERT_EQ(recv[i], sum) << "reduce_scatter step " << step << " rank " << r;
      }
    }
  }
}

// Opens an arena (256-byte slots, no cross-memory reads) on 2 thread ranks, rank r told of
// on_host(r) ranks on its host, and runs fn(r, arena) on each rank whose arena opened.
template <typename OnHost, typename Fn>
void on_two_arenas(OnHost on_host, Fn fn) {
  ThreadWorldHandle world = make_thread_world(2);
  std::vector<std::thread> threads;
  const std::string group = "world";
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Workspace ws;
      Collective c(*world.transports[r], ws, "all_gather", group, 1, 20, 1 << 20);
      auto arena = SharedArena::open(c, 256, false, on_host(r));
      if (arena) fn(r, *arena);
    });
  for (auto& t : threads) t.join();
}

TEST(SharedArena, PollsLongOnlyWhileTheHostHasACorePerRank) {
  const Clock::duration alone = arena_spin(2, 0, 2), crowded = arena_spin(3, 0, 2);
  EXPECT_GT(alone, crowded);
  EXPECT_EQ(arena_spin(2, 2, 2), alone);
  EXPECT_EQ(arena_spin(1, 1, 1), alone);
  EXPECT_EQ(arena_spin(2, 8, 2), crowded);  // a 2-rank group among 8 ranks on 2 cores
  EXPECT_EQ(arena_spin(2, 8, 8), alone);
  EXPECT_EQ(arena_spin(2, 0, 0), crowded);  // cores not known
  EXPECT_EQ(arena_spin(2, 0, -1), crowded);
  EXPECT_FALSE(host_crowded(2, 0, 2));
  EXPECT_FALSE(host_crowded(2, 8, 8));
  EXPECT_TRUE(host_crowded(3, 0, 2));
  EXPECT_TRUE(host_crowded(2, 8, 2));
  EXPECT_TRUE(host_crowded(2, 0, 0));
  // An opened arena polls as its group and the host's ranks say, and the automatic all-to-all
  // follows: pair rings while every rank has a core, rounds on a crowded host.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (int on_host : {0, 2, 1 << 20}) {
    std::vector<Clock::duration> spins(2);
    std::vector<int> crowded_seen(2, -1);
    std::vector<std::vector<SharedAllToAll>> resolved(2);
    on_two_arenas([&](int) { return on_host; },
                  [&](int r, SharedArena& arena) {
                    spins[r] = arena.spin();
                    crowded_seen[r] = arena.crowded();
                    for (SharedAllToAll a : {SharedAllToAll::automatic, SharedAllToAll::pair_rings,
                                             SharedAllToAll::rounds, SharedAllToAll::in_place})
                      resolved[r].push_back(resolve_shared_all_to_all(a, arena));
                  });
    const bool is_crowded = host_crowded(2, on_host, cpus);
    // in_place without cross-memory reads (not asked for here) is staged in rounds.
    const std::vector<SharedAllToAll> expected = {
        is_crowded ? SharedAllToAll::rounds : SharedAllToAll::pair_rings, SharedAllToAll::pair_rings,
        SharedAllToAll::rounds, SharedAllToAll::rounds};
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(spins[r], arena_spin(2, on_host, cpus)) << on_host << " " << r;
      EXPECT_EQ(crowded_seen[r], int(is_crowded)) << on_host << " " << r;
      EXPECT_EQ(resolved[r], expected) << on_host << " " << r;
    }
  }
}

// Ranks that see their host differently (one told of a million ranks on it, one of two) agree that it
// is crowded, so that both run the same all-to-all.
TEST(SharedArena, GroupAgreesOnACrowdedHost) {
  std::vector<int> crowded(2, -1);
  on_two_arenas([](int r) { return r == 0 ? 1 << 20 : 2; },
                [&](int r, SharedArena& arena) { crowded[r] = arena.crowded(); });
  EXPECT_EQ(crowded, (std::vector<int>{1, 1}));
}

TEST(SharedArena, ThreadWorldsCountTheirRanksOnTheHostAndSplitsKeepIt) {
  for (int n : {1, 3, 8})
    run_thread_world(n, [n](Communicator& comm) {
      EXPECT_EQ(comm.options().ranks_on_host, n);
      EXPECT_EQ(comm.split(comm.rank() % 2, comm.rank(), "half")->options().ranks_on_host, n);
    });
  CommOptions told;
  told.ranks_on_host = 12;  // a value set by the caller is kept
  run_thread_world(
      2, [](Communicator& comm) { EXPECT_EQ(comm.options().ranks_on_host, 12); }, told);
}

TEST(SharedArena, FourCollectivesInterleavedOnOneArena) {
  for (bool cross : {false, true})  // in place, the staged reduce-scatter shares rounds with the others
    for (int n : {2, 3, 5, 8})
      on_arena(
          n, 64, 20, [n](int r, Collective& c, SharedArena& a) { mixed_collectives(r, c, a, n); }, {}, cross);
}

TEST(SharedArena, FourCollectivesInterleavedOnOneArenaUnderDelays) {
  for (bool cross : {false, true})
    for (int n : {2, 3, 8})
      on_arena(
          n, 64, 30, [n](int r, Collective& c, SharedArena& a) { mixed_collectives(r, c, a, n); },
          DelayInjection{.seed = std::uint64_t(n), .max_us = 300}, cross);
}

}  // namespace
}  // namespace tz
