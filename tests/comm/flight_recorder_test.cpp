// The flight recorder and `tierzero trace` with ranks as threads: a bounded ring per communicator;
// a staged desync (one rank skips a collective) dumped by every rank and merged into the point where
// the ranks part; the culprit rule on hand-made views; a failing assertion in one rank's body ends
// the world in seconds, not at the collective timeout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/fault_verdict.hpp"
#include "comm/flight_trace.hpp"
#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "core/json_read.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

TEST(FlightRecorder, KeepsTheLastEntriesOfEachCommunicator) {
  CommOptions opts;
  opts.flight_recorder_entries = 4;
  run_thread_world(
      2,
      [](Communicator& comm) {
        float x[3] = {1, 2, 3};
        for (int i = 0; i < 10; ++i) comm.all_reduce(x, x, 3, DType::f32).wait();
        comm.broadcast(x, 2, DType::f32, 1).wait();
        const nlohmann::json j = comm.recorder()->to_json("test");
        EXPECT_EQ(j.at("world_rank"), comm.rank());
        EXPECT_EQ(j.at("world_size"), 2);
        ASSERT_EQ(j.at("groups").size(), 1u);
        const auto& g = j.at("groups")[0];
        EXPECT_EQ(g.at("group"), "world");
        EXPECT_EQ(g.at("members"), (std::vector<int>{0, 1}));
        EXPECT_EQ(g.at("issued"), 11);
        const auto& e = g.at("entries");
        ASSERT_EQ(e.size(), 4u);  // seq 8..11
        EXPECT_EQ(e[0].at("seq"), 8);
        EXPECT_EQ(e[3].at("seq"), 11);
        EXPECT_EQ(e[3].at("op"), "broadcast");
        EXPECT_EQ(e[3].at("algorithm"), "shared");  // thread ranks share memory
        EXPECT_EQ(e[3].at("count"), 2);
        EXPECT_EQ(e[3].at("bytes"), 8);
        EXPECT_EQ(e[2].at("op"), "all_reduce");
        EXPECT_EQ(e[2].at("algorithm"), "shared");  // reduce-scatter + all-gather, shared
        EXPECT_EQ(e[2].at("dtype"), "f32");
        for (const auto& x : e) {
          EXPECT_EQ(x.at("state"), "completed");
          EXPECT_LE(x.at("issued_s").get<double>(), x.at("started_s").get<double>());
          EXPECT_LE(x.at("started_s").get<double>(), x.at("ended_s").get<double>());
        }
      },
      opts);
}

// Rank 1 skips the third collective; every rank dumps; the merge names seq 3, the waiting ranks and
// the one that never arrived; `tierzero trace` prints the same.
TEST(FlightRecorder, StagedDesyncIsTracedToTheFirstPointWhereRanksPart) {
  test::ScratchDir scratch;
  const std::string dir = scratch.path("flight");
  CommOptions opts;
  opts.timeout_s = 0.3;
  run_thread_world(
      3,
      [&](Communicator& comm) {
        auto pair = comm.split(comm.rank() < 2 ? 0 : 1, comm.rank(), "half");
        std::vector<float> in(4, 1.f), out(12);
        comm.all_gather(in.data(), out.data(), 4, DType::f32).wait();
        if (comm.rank() != 1) {
          try {
            comm.all_gather(in.data(), out.data(), 4, DType::f32).wait();
          } catch (const CommError&) {
          }
        }
        comm.recorder()->dump(flight_record_path(dir, comm.rank()), "test dump");
      },
      opts);
  const TraceReport rep = merge_flight_records(read_flight_records(dir));
  EXPECT_EQ(rep.world_size, 3);
  EXPECT_EQ(rep.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(rep.missing.empty());
  const TraceGroup* world = nullptr;
  int halves = 0;
  for (const TraceGroup& g : rep.groups) {
    if (g.label == "world") world = &g;
    if (g.label == "half") {
      ++halves;
      EXPECT_FALSE(g.part_seq) << "the split groups never parted";
    }
  }
  EXPECT_EQ(halves, 2);  // {0,1} and {2}: one label, two groups
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->completed, (std::map<int, std::uint64_t>{{0, 2}, {1, 2}, {2, 2}}));
  EXPECT_EQ(world->issued, (std::map<int, std::uint64_t>{{0, 3}, {1, 2}, {2, 3}}));
  ASSERT_TRUE(world->part_seq);
  EXPECT_EQ(*world->part_seq, 3u);  // seq 1 split, seq 2 the all-gather all did, seq 3 the skipped one
  EXPECT_EQ(world->never_arrived, (std::vector<int>{1}));
  EXPECT_EQ(world->waiting, (std::vector<int>{0, 2}));
  EXPECT_TRUE(world->done.empty());
  EXPECT_FALSE(world->disagree);

  const std::string cmd = std::string(TZ_BINARY_DIR) + "/tierzero trace " + dir + " 2>&1";
  ASSERT_TRUE(std::filesystem::exists(std::string(TZ_BINARY_DIR) + "/tierzero"))
      << "build the tierzero target";
  std::FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  EXPECT_EQ(pclose(p), 0) << text;
  EXPECT_NE(text.find("flight records of 3 of 3 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("group 'world' {0,1,2}: completed 0:2 1:2 2:2; issued 0:3 1:2 2:3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("parts at seq 3: 0: all_gather f32 x4 (failed); 2: all_gather f32 x4 (failed)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("completed by {}, waiting in it: {0,2}, never arrived: {1}"), std::string::npos)
      << text;
}

// Two runs of the same world size that dumped into one directory (the second run's rank 1 replaced
// the first's): every rank of a run writes the run's id, the runs' ids differ, and trace refuses the
// mix, naming each run and its files, instead of merging them into a wrong report. Files without a
// run id (a tierzero before run ids) merge only with each other.
TEST(FlightRecorder, TraceRefusesTheFilesOfTwoRuns) {
  test::ScratchDir scratch;
  auto run = [&](const std::string& dir, bool rank1_skips) {
    CommOptions opts;
    opts.timeout_s = 0.3;
    run_thread_world(
        3,
        [&](Communicator& comm) {
          std::vector<float> in(4, 1.f), out(12);
          comm.all_gather(in.data(), out.data(), 4, DType::f32).wait();
          if (!rank1_skips || comm.rank() != 1) {
            try {
              comm.all_gather(in.data(), out.data(), 4, DType::f32).wait();
            } catch (const CommError&) {
            }
          }
          comm.recorder()->dump(flight_record_path(dir, comm.rank()), "test dump");
        },
        opts);
  };
  const std::string a = scratch.path("a"), b = scratch.path("b"), mixed = scratch.path("mixed");
  run(a, true);
  run(b, false);
  auto run_id = [](const std::string& dir, int rank) {
    return read_json_file(flight_record_path(dir, rank), "test").at("run_id").get<std::string>();
  };
  const std::string id_a = run_id(a, 0), id_b = run_id(b, 0);
  EXPECT_EQ(id_a.size(), 16u);
  EXPECT_NE(id_a, id_b);
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(run_id(a, r), id_a);
    EXPECT_EQ(run_id(b, r), id_b);
  }
  EXPECT_EQ(merge_flight_records(read_flight_records(a)).run_id, id_a);

  std::filesystem::create_directories(mixed);
  for (const auto& [from, rank] : {std::pair{a, 0}, {b, 1}, {a, 2}})
    std::filesystem::copy_file(flight_record_path(from, rank), flight_record_path(mixed, rank));
  test::expect_input_error([&] { merge_flight_records(read_flight_records(mixed)); },
                           {mixed, "2 different runs", "run " + id_a + ": rank-0.json (pid ",
                            "rank-2.json (pid ", "run " + id_b + ": rank-1.json (pid ", "dumped at "});
  const std::string cmd = std::string(TZ_BINARY_DIR) + "/tierzero trace " + mixed + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << text;
  EXPECT_EQ(
      text.rfind("tierzero: error: trace: " + mixed + ": the flight records are of 2 different runs", 0), 0u)
      << text;
  EXPECT_EQ(text.find("completed by"), std::string::npos) << "no report of a merged run: " << text;

  // Without run ids (version 1): all of them merge as before; mixed with files that have one, refused.
  auto strip = [](const std::string& path) {
    nlohmann::json j = read_json_file(path, "test");
    j.erase("run_id");
    j["version"] = 1;
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(j.dump().c_str(), f);
    std::fclose(f);
  };
  for (int r = 0; r < 3; ++r) strip(flight_record_path(a, r));
  const TraceReport old = merge_flight_records(read_flight_records(a));
  EXPECT_EQ(old.run_id, "");
  EXPECT_EQ(old.ranks, (std::vector<int>{0, 1, 2}));
  std::filesystem::copy_file(flight_record_path(a, 1), flight_record_path(mixed, 1),
                             std::filesystem::copy_options::overwrite_existing);
  test::expect_input_error(
      [&] { merge_flight_records(read_flight_records(mixed)); },
      {"no run id (written before run ids): rank-1.json", "run " + id_a + ": rank-0.json"});
}

TEST(FlightRecorder, TraceRejectsADirectoryWithoutRecords) {
  test::ScratchDir scratch;
  const std::string dir = scratch.path("records");
  std::filesystem::create_directories(dir);
  test::expect_input_error([&] { read_flight_records(dir); }, {dir, "holds no flight records"});
  test::expect_input_error([&] { read_flight_records(dir + "/nope"); }, {"is not a directory"});
  {
    std::FILE* f = std::fopen((dir + "/rank-0.json").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"format\": \"something else\"}", f);
    std::fclose(f);
  }
  test::expect_input_error([&] { read_flight_records(dir); },
                           {"rank-0.json", "not a tierzero flight record"});
}

RankView view(int rank, std::vector<GroupView> groups, std::map<int, std::string> peers = {}) {
  return {rank, 0, std::move(groups), std::move(peers)};
}

TEST(FaultVerdict, SilentLostAndStoppedRanksAreTheCulprits) {
  const std::vector<int> all{0, 1, 2};
  std::vector<std::optional<RankView>> views(3);
  views[0] = view(0, {{"world", all, 5, 4, "all_gather", true}});
  views[2] = view(2, {{"world", all, 5, 4, "all_gather", true}}, {{1, "stopped"}});
  FaultVerdict v = agree_culprit(views, 3);
  EXPECT_EQ(v.culprits, (std::vector<int>{1}));
  EXPECT_EQ(
      v.line,
      "culprit world rank(s) {1}: world rank(s) {1} did not answer the fault exchange within 3 s (process of "
      "{1} stopped); all_gather seq 5 on group 'world' {0,1,2} waits for {1} (waiting: {0,2}); ranks were "
      "in: 0: all_gather seq 5 on 'world', 1: ?, 2: all_gather seq 5 on 'world'");
  views[2]->peer_states = {{1, "gone"}};
  v = agree_culprit(views, 3);
  EXPECT_EQ(v.culprits, (std::vector<int>{1}));
  EXPECT_NE(v.line.find("world rank(s) {1} lost (process gone)"), std::string::npos) << v.line;
  // A view survives its text form.
  const auto back = rank_view_from_string(rank_view_to_string(*views[2]));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->peer_states, views[2]->peer_states);
  EXPECT_EQ(back->groups.size(), 1u);
  EXPECT_FALSE(rank_view_from_string("{not json"));
}

TEST(FaultVerdict, AnIdleRankIsBlamedNotTheRanksWaitingBehindIt) {
  // Rank 0 waits on the world for rank 2; rank 2 waits in its node group for rank 3, which is idle.
  std::vector<std::optional<RankView>> views(4);
  const std::vector<int> world{0, 1, 2, 3}, node{2, 3};
  views[0] = view(0, {{"world", world, 7, 6, "all_reduce", true}});
  views[1] = view(1, {{"world", world, 7, 6, "all_reduce", true}});
  views[2] = view(2, {{"world", world, 6, 6, "", false}, {"node", node, 3, 2, "all_gather", true}});
  views[3] = view(3, {{"world", world, 6, 6, "", false}, {"node", node, 2, 2, "", false}});
  const FaultVerdict v = agree_culprit(views, 3);
  EXPECT_EQ(v.culprits, (std::vector<int>{3}));
  EXPECT_NE(v.line.find("all_gather seq 3 on group 'node' {2,3} waits for {3} (waiting: {2})"),
            std::string::npos)
      << v.line;
  EXPECT_NE(v.line.find("all_reduce seq 7 on group 'world' {0,1,2,3} waits for {3}"), std::string::npos)
      << v.line;
}

TEST(FaultVerdict, TheCulpritsHostIsNamedAndALostHostSaysSo) {
  // Two hosts of two ranks; both ranks of h2 are silent: the whole host is named.
  std::vector<std::optional<RankView>> views(4);
  const std::vector<int> world{0, 1, 2, 3};
  views[0] = view(0, {{"world", world, 5, 4, "all_gather", true}});
  views[1] = view(1, {{"world", world, 5, 4, "all_gather", true}});
  FaultVerdict v = agree_culprit(views, 3);
  const std::vector<std::string> hosts{"h1", "h1", "h2", "h2"};
  EXPECT_EQ(
      name_culprit_hosts(v, hosts).rfind(
          "culprit world rank(s) {2,3} (host h2: all its ranks {2,3}): world rank(s) {2,3} did not answer",
          0),
      0u);
  // One rank of a host: named as part of it; hosts unknown: the line unchanged.
  views[3] = view(3, {{"world", world, 5, 4, "all_gather", true}});
  v = agree_culprit(views, 3);
  EXPECT_EQ(
      name_culprit_hosts(v, hosts).rfind("culprit world rank(s) {2} (host h2: {2} of its ranks {2,3}):", 0),
      0u);
  EXPECT_EQ(name_culprit_hosts(v, {}), v.line);
}

// Run in a child process by the next test: a rank fails an ASSERT and returns while the others wait
// in a barrier with the default 300 s timeout.
TEST(FailFast, DISABLED_RankAssertionEndsTheWorld) {
  run_thread_world(3, [](Communicator& comm) {
    ASSERT_NE(comm.rank(), 1) << "rank 1 fails on purpose";
    comm.barrier().wait();
  });
}

TEST(FailFast, AFailingAssertionInOneRankFinishesInSeconds) {
  const auto t0 = std::chrono::steady_clock::now();
  std::FILE* p = popen(
      // Without the shard variables: under sharding the child would run no test at all.
      ("env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS timeout 120 " +
       std::filesystem::read_symlink("/proc/self/exe").string() +
       " --gtest_also_run_disabled_tests --gtest_filter=FailFast.DISABLED_RankAssertionEndsTheWorld 2>&1")
          .c_str(),
      "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int status = pclose(p);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1)
      << text;  // gtest's failure code, not timeout's 124
  EXPECT_NE(text.find("rank 1 fails on purpose"), std::string::npos) << text;
  EXPECT_NE(text.find("thread world aborted: a rank failed an assertion"), std::string::npos) << text;
  EXPECT_LT(s, 60.0) << "the other ranks waited for their collective timeout";
}

}  // namespace
}  // namespace tz
