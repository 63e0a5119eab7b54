// Stopping a run on request: a flag set on one rank (what a SIGTERM to one process does) stops every
// rank after the same step, runs the on_stop_requested hook on each with that step, and leaves the
// model exactly as a run of that many steps leaves it; with checkpointing configured, the stopped step
// is saved even when no save was due; the real signal handler sets the process flag.
#include "train/stop_request.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <mutex>

#include "comm/thread_world.hpp"
#include "engine/engine_test_util.hpp"
#include "plan/partition_plan.hpp"
#include "train/train_session.hpp"

namespace tz {
namespace {

using test::RunSpec;

struct RankOutcome {
  int steps_seen = 0;     // on_step calls
  int hook_steps = -1;    // on_stop_requested's argument (-1: not called)
  int thrown_steps = -1;  // StopRequested::steps_done (-1: not thrown)
  std::string message;
  std::vector<float> params;
  std::vector<int> saved_steps;  // the checkpoints saved, by step (with a save directory)
};

// Runs `spec` on a thread mesh of `world` ranks through run_training; rank `stop_rank` raises its
// flag with `signal` inside its on_step of step `stop_after` (1-based), or never when stop_rank < 0.
// With cut_after > 0, instead: exactly that many engine steps of the same run, no loop, no flag.
// With a save directory: checkpoints there after every `save_every`-th step (0: after the last only).
std::vector<RankOutcome> run(int world, const RunSpec& spec, int stop_rank, int stop_after, int signal,
                             int cut_after = 0, const std::string& save_dir = "", int save_every = 0) {
  const Topology topo = test::topology_for_world(world);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  TrainRun tr = test::train_run(spec, world);
  PlanOptions o = PartitionPlan::preset("zero3", topo).options();
  o.dtype_mode = DTypeMode::fp32;
  o.micro_batch_size = spec.micro_batch;
  tr.plan = PartitionPlan::preset("zero3", topo).with_options(o);
  std::vector<RankOutcome> out(static_cast<std::size_t>(world));
  std::vector<StopFlag> flags(static_cast<std::size_t>(world));
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const int rank = mesh.world().rank();
    RankOutcome& me = out[static_cast<std::size_t>(rank)];
    ShardedEngine engine(mesh, config, tr.plan, tr.engine);
    DataLoader loader(tokens, spec.micro_batch, spec.seq, rank, world, spec.seed);
    if (cut_after > 0) {
      for (int i = 0; i < cut_after; ++i)
        engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
      me.steps_seen = cut_after;
      me.params = engine.gather_master_params();
      return;
    }
    Checkpointing ck;
    ck.world = &mesh.world();
    ck.save.dir = save_dir;
    ck.save.io_timeout_s = 60;
    ck.every = save_every;
    ck.cursor = [&] { return loader.cursor(); };
    ck.on_save = [&](const SaveResult& s) { me.saved_steps.push_back(s.step); };
    try {
      run_training(
          mesh, engine, tr, [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); },
          {.on_step =
               [&](const TrainStep&) {
                 ++me.steps_seen;
                 if (rank == stop_rank && me.steps_seen == stop_after) flags[rank].request(signal);
               },
           .checkpointing = save_dir.empty() ? nullptr : &ck,
           .stop = {.flag = &flags[rank], .world = &mesh.world(), .on_stop_requested = [&](int done) {
                      me.hook_steps = done;
                    }}});
    } catch (const StopRequested& e) {
      me.thrown_steps = e.steps_done;
      me.message = e.what();
    }
    me.params = engine.gather_master_params();  // collective: every rank is here, none is stuck
  });
  return out;
}

TEST(StopRequest, OneRanksFlagStopsEveryRankAtTheSameStep) {
  for (int world : {3, 4}) {
    RunSpec spec;
    spec.steps = 8;
    const int stop_rank = world - 2, stop_after = 3;
    const auto stopped = run(world, spec, stop_rank, stop_after, SIGTERM);
    const auto unstopped = run(world, spec, -1, 0, 0);
    for (int r = 0; r < world; ++r) {
      const RankOutcome& o = stopped[static_cast<std::size_t>(r)];
      EXPECT_EQ(o.steps_seen, stop_after) << "world " << world << " rank " << r;
      EXPECT_EQ(o.hook_steps, stop_after) << "world " << world << " rank " << r;
      EXPECT_EQ(o.thrown_steps, stop_after) << "world " << world << " rank " << r;
      EXPECT_NE(o.message.find(
                    fmt::format("stopped by SIGTERM (received by rank {}) after step 3 of 8", stop_rank)),
                std::string::npos)
          << o.message;
      EXPECT_EQ(o.params, stopped[0].params) << "rank " << r << " holds another model";
      const RankOutcome& u = unstopped[static_cast<std::size_t>(r)];
      EXPECT_EQ(u.steps_seen, spec.steps);
      EXPECT_EQ(u.hook_steps, -1);
      EXPECT_EQ(u.thrown_steps, -1);
    }
  }
}

// The stopped run's weights are exactly those of the same run cut after that many steps: the stop
// comes between steps, never inside one, and no rank trains on.
TEST(StopRequest, StoppedStateEqualsTheRunCutAtThatStep) {
  RunSpec spec;
  spec.steps = 6;
  const auto stopped = run(3, spec, 0, 2, SIGINT);
  const auto cut = run(3, spec, -1, 0, 0, 2);
  const auto full = run(3, spec, -1, 0, 0);
  ASSERT_EQ(stopped[0].thrown_steps, 2);
  EXPECT_NE(stopped[0].message.find("stopped by SIGINT (received by rank 0) after step 2 of 6"),
            std::string::npos)
      << stopped[0].message;
  for (int r = 0; r < 3; ++r) EXPECT_EQ(stopped[r].params, cut[r].params) << "rank " << r;
  EXPECT_NE(full[0].params, stopped[0].params);
}

// A stop saves the step it stopped at, also between the steps `every` asks for (the run would lose
// them otherwise: a job's end under a scheduler comes at any step), and only once when the step was
// due anyway.
TEST(StopRequest, StopSavesTheStoppedStepOnce) {
  RunSpec spec;
  spec.steps = 8;
  const std::string root = (std::filesystem::path(::testing::TempDir()) / "tz_stop_save").string();
  std::filesystem::remove_all(root);
  const auto between = run(3, spec, 1, 3, SIGTERM, 0, root + "/between", 0);
  const auto due = run(3, spec, 1, 4, SIGTERM, 0, root + "/due", 2);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(between[r].thrown_steps, 3) << "rank " << r;
    EXPECT_EQ(between[r].saved_steps, (std::vector<int>{3})) << "rank " << r;
    EXPECT_EQ(due[r].thrown_steps, 4) << "rank " << r;
    EXPECT_EQ(due[r].saved_steps, (std::vector<int>{2, 4})) << "rank " << r;
  }
  EXPECT_TRUE(std::filesystem::exists(root + "/between/step_3"));
  std::filesystem::remove_all(root);
}

TEST(StopRequest, SignalHandlerSetsTheProcessFlagOnce) {
  StopFlag& flag = process_stop_flag();
  flag.clear();
  install_stop_signal_handlers();
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_EQ(flag.signal(), SIGTERM);
  flag.clear();
  ASSERT_EQ(std::raise(SIGINT), 0);
  EXPECT_EQ(flag.signal(), SIGINT);
  flag.clear();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

TEST(StopRequest, FirstRequestWins) {
  StopFlag f;
  EXPECT_EQ(f.signal(), 0);
  f.request(SIGINT);
  f.request(SIGTERM);
  EXPECT_EQ(f.signal(), SIGINT);
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGUSR1), fmt::format("signal {}", SIGUSR1));
}

TEST(StopRequest, AgreementNamesEveryRankThatWasAsked) {
  std::vector<StopFlag> flags(5);
  flags[1].request(SIGTERM);
  flags[3].request(SIGINT);
  std::mutex mu;
  std::vector<StopDecision> seen;
  run_thread_world(5, [&](Communicator& c) {
    const StopDecision d = agree_stop(c, flags[static_cast<std::size_t>(c.rank())]);
    std::lock_guard lock(mu);
    seen.push_back(d);
  });
  ASSERT_EQ(seen.size(), 5u);
  for (const auto& d : seen) {
    EXPECT_EQ(d.signal, SIGTERM);  // the lowest rank's
    EXPECT_EQ(d.ranks, (std::vector<int>{1, 3}));
  }
}

}  // namespace
}  // namespace tz
