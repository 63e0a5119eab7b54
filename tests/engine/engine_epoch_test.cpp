// Training across data-epoch boundaries: a data set of only 17 windows, so that a 10-step run of
// world x 2 windows per step crosses two or more epochs, some of them inside a step (ranks below the
// boundary read epoch e, ranks above it epoch e + 1). On every rank and step, the windows the engine
// trained on are the rank's block of the single process's batch and the windows the stream puts at
// those positions; each epoch visits every window exactly once across the ranks; and the sharded run
// matches the single process (losses and final weights, fp32) at world sizes 2, 3, 4 and 6.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

using test::RunSpec;

struct RankBatches {
  std::vector<std::vector<std::int32_t>> inputs, targets;  // per step
};

TEST(EngineEpochs, RanksCrossEpochBoundariesAsTheSingleProcessDoes) {
  const GptConfig config = test::tiny_gpt();
  RunSpec spec;
  spec.steps = 10;
  const std::uint64_t windows = 17;  // prime: boundaries fall inside steps, even inside a rank's batch
  const auto tokens = test::synthetic_tokens(windows * spec.seq + 1, config.vocab_size, 5);
  for (int world : {2, 3, 4, 6}) {
    const Topology topo = test::topology_for_world(world);
    const std::uint64_t per_step = std::uint64_t(world) * spec.micro_batch;
    ASSERT_GT(spec.steps * per_step, 2 * windows) << "the run must cross epochs";
    PartitionPlan plan = PartitionPlan::preset(world % 2 == 0 ? "three-level" : "zero3", topo);
    PlanOptions o = plan.options();
    o.dtype_mode = DTypeMode::fp32;
    o.micro_batch_size = spec.micro_batch;
    plan = plan.with_options(o);

    std::vector<RankBatches> got(static_cast<std::size_t>(world));
    std::vector<EngineStep> steps0;
    std::vector<float> params0;
    std::mutex mu;
    run_thread_mesh(topo, [&](Mesh& mesh) {
      const int rank = mesh.world().rank();
      ShardedEngine engine(mesh, config, plan, test::engine_options(spec));
      DataLoader loader(tokens, spec.micro_batch, spec.seq, rank, world, spec.seed);
      EXPECT_EQ(loader.num_windows(), windows);
      RankBatches& mine = got[static_cast<std::size_t>(rank)];
      std::vector<EngineStep> steps;
      for (int s = 0; s < spec.steps; ++s)
        steps.push_back(engine.step([&](std::int32_t* in, std::int32_t* tg) {
          loader.next(in, tg);
          const std::size_t n = std::size_t(spec.micro_batch) * spec.seq;
          mine.inputs.emplace_back(in, in + n);
          mine.targets.emplace_back(tg, tg + n);
        }));
      std::vector<float> params = engine.gather_master_params();
      if (rank == 0) {
        std::lock_guard lock(mu);
        steps0 = std::move(steps);
        params0 = std::move(params);
      }
    });

    // The single process: one loader of world x B windows per step, and the stream's positions.
    DataLoader single = DataLoader::union_of_ranks(tokens, spec.micro_batch, spec.seq, world, spec.seed);
    const std::size_t rank_n = std::size_t(spec.micro_batch) * spec.seq;
    std::vector<std::int32_t> in(rank_n * world), tg(rank_n * world);
    std::map<std::uint64_t, std::map<std::uint64_t, int>> visits;  // epoch -> window -> times
    for (int s = 0; s < spec.steps; ++s) {
      single.next(in.data(), tg.data());
      for (int r = 0; r < world; ++r) {
        const RankBatches& b = got[static_cast<std::size_t>(r)];
        ASSERT_EQ(b.inputs.size(), std::size_t(spec.steps));
        const std::vector<std::int32_t> want_in(in.begin() + r * rank_n, in.begin() + (r + 1) * rank_n);
        const std::vector<std::int32_t> want_tg(tg.begin() + r * rank_n, tg.begin() + (r + 1) * rank_n);
        EXPECT_EQ(b.inputs[s], want_in) << "world " << world << " step " << s << " rank " << r;
        EXPECT_EQ(b.targets[s], want_tg) << "world " << world << " step " << s << " rank " << r;
        for (int w = 0; w < spec.micro_batch; ++w) {
          const std::uint64_t p = s * per_step + std::uint64_t(r) * spec.micro_batch + w;
          const WindowRef ref = single.window_at(p);
          EXPECT_EQ(ref, single.window_at_ref(p)) << "position " << p;
          // The window's tokens in the data: inputs are its first T, targets the T after the first.
          const std::int32_t* first = tokens.data() + ref.window * spec.seq;
          for (int t = 0; t < spec.seq; ++t) {
            ASSERT_EQ(b.inputs[s][w * spec.seq + t], first[t]) << "world " << world << " position " << p;
            ASSERT_EQ(b.targets[s][w * spec.seq + t], first[t + 1]) << "world " << world << " position " << p;
          }
          ++visits[p / windows][ref.window];
        }
      }
    }
    // Every epoch the run finished saw each window once: nothing lost or repeated at a boundary.
    const std::uint64_t complete = spec.steps * per_step / windows;
    ASSERT_GE(complete, 2u);
    for (std::uint64_t e = 0; e < complete; ++e) {
      EXPECT_EQ(visits[e].size(), windows) << "world " << world << " epoch " << e;
      for (const auto& [w, times] : visits[e]) EXPECT_EQ(times, 1) << "epoch " << e << " window " << w;
    }

    const test::ReferenceRun ref = test::reference_run(config, tokens, world, spec);
    ASSERT_EQ(steps0.size(), ref.steps.size());
    for (std::size_t i = 0; i < ref.steps.size(); ++i)
      EXPECT_LE(std::abs(steps0[i].loss - ref.steps[i].loss), 1e-5 * std::abs(ref.steps[i].loss))
          << "world " << world << " step " << i;
    EXPECT_LE(test::normalized_error(params0, ref.params), 1e-5) << "world " << world;
  }
}

}  // namespace
}  // namespace tz
