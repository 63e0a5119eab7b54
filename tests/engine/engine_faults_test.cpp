// Agreement and faults: ranks with different configurations stop with a message naming the rank; a
// NaN on one rank makes every rank skip the step together, and too many make all stop together.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "engine/config_agreement.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

TEST(ConfigAgreement, SameTextPassesDifferentRankIsNamed) {
  run_thread_world(4, [](Communicator& world) { check_config_agreement(world, "same config"); });
  try {
    run_thread_world(4, [](Communicator& world) {
      check_config_agreement(world, world.rank() == 2 ? "lr 1e-3" : "lr 6e-4");
    });
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 ("), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("rank 1 ("), std::string::npos) << e.what();
  }
}

PartitionPlan plan_for(const char* name, const Topology& topo) {
  PartitionPlan p = PartitionPlan::preset(name, topo);
  PlanOptions o = p.options();
  o.micro_batch_size = 2;
  return p.with_options(o);
}

TEST(EngineFaults, NanOnOneRankSkipsTheStepOnAllRanks) {
  const Topology topo = test::topology_for_world(4);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (const char* name : {"three-level", "ddp", "zeropp"}) {
    EngineOptions opts = test::engine_options({});
    opts.inject_nan_step = 1;
    opts.inject_nan_rank = 3;
    std::atomic<int> skipped_on{0};
    run_thread_mesh(topo, [&](Mesh& mesh) {
      ShardedEngine engine(mesh, config, plan_for(name, topo), opts);
      DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 4, 1);
      std::vector<float> before;
      for (int s = 0; s < 3; ++s) {
        if (s == 1) before = engine.gather_master_params();
        EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
        EXPECT_EQ(st.skipped, s == 1) << name << " rank " << mesh.world().rank() << " step " << s;
        if (st.skipped) {
          ++skipped_on;
          EXPECT_EQ(engine.gather_master_params(), before) << "a skipped step must not change the weights";
        } else {
          EXPECT_TRUE(std::isfinite(st.loss) && std::isfinite(st.grad_norm));
        }
      }
      EXPECT_EQ(engine.skipped_steps(), 1);
    });
    EXPECT_EQ(skipped_on.load(), 4) << name << ": every rank skips together";
  }
}

TEST(EngineFaults, TooManyNonFiniteStepsStopEveryRankTogether) {
  const Topology topo = test::topology_for_world(2);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  EngineOptions opts = test::engine_options({});
  opts.adamw.lr = 1e30f;  // diverges at once: every step is non-finite after the first update
  opts.schedule.max_lr = opts.schedule.min_lr = 1e30f;
  opts.grad_clip = 0;
  opts.max_nonfinite_steps = 2;
  std::atomic<int> stopped{0};
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan_for("zero3", topo), opts);
    DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 2, 1);
    try {
      for (int s = 0; s < 10; ++s)
        engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("max_nonfinite_steps = 2"), std::string::npos) << e.what();
      EXPECT_EQ(engine.skipped_steps(), 3);
      ++stopped;
    }
  });
  EXPECT_EQ(stopped.load(), 2);
}

TEST(EngineFaults, TopologyOrGroupsThatDoNotFitTheWorldAreInputErrors) {
  const Topology eight = test::topology_for_world(8);
  // An 8-rank topology on a 4-rank world.
  try {
    run_thread_world(4, [&](Communicator& world) {
      Mesh mesh(eight, std::unique_ptr<Communicator>(world.split(0, world.rank(), "world")));
    });
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("describes 8 ranks but the world has 4"), std::string::npos)
        << e.what();
  }
  // A partition group of 3 ranks on a topology whose domains have 2, 4 and 8.
  try {
    PartitionPlan::preset("mics", eight, PresetArgs{.partition_size = 3});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tz
