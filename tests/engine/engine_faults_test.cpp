// Agreement and faults: ranks with different configurations stop with a message naming the rank; a
// non-finite value on one rank (in its loss, its gradient, a quantized block or its optimizer
// update) makes every rank skip the step together, with the same vote reported on every rank, and
// too many make all stop together.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"
#include "train/config_agreement.hpp"

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
  for (const char* name : {"three-level", "ddp", "zeropp", "zero1", "mics"}) {
    EngineOptions opts = test::engine_options({});
    opts.inject_nan_step = 1;
    opts.inject_nan_rank = 3;
    std::atomic<int> skipped_on{0};
    std::mutex mu;
    std::vector<NonfiniteVote> votes;
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
          EXPECT_GE(st.nonfinite.grad_ranks, 1u) << name;
          EXPECT_EQ(st.nonfinite.loss_ranks, 0u) << name << ": the loss was computed before the NaN";
          EXPECT_EQ(st.nonfinite.optim_values, 0u) << name << ": no update is checked on a NaN norm";
          std::lock_guard lock(mu);
          votes.push_back(st.nonfinite);
        } else {
          EXPECT_TRUE(std::isfinite(st.loss) && std::isfinite(st.grad_norm));
          EXPECT_FALSE(st.nonfinite.any());
        }
      }
      EXPECT_EQ(engine.skipped_steps(), 1);
    });
    EXPECT_EQ(skipped_on.load(), 4) << name << ": every rank skips together";
    for (const auto& v : votes) EXPECT_EQ(v, votes.front()) << name << ": one vote on every rank";
  }
}

// A non-finite loss on one rank with finite gradients everywhere (so the global norm is finite): the
// non-finite flag still makes every rank skip, with the pipelined boundary's reductions already done.
TEST(EngineFaults, NanLossOnOneRankWithFiniteGradientsSkipsOnEveryRank) {
  const Topology topo = test::topology_for_world(8);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (const char* name : {"three-level", "zero3", "zeropp", "mics", "ddp", "zero1"}) {
    EngineOptions opts = test::engine_options({});
    opts.inject_nan_loss_step = 1;
    opts.inject_nan_loss_rank = 5;
    std::atomic<int> skipped_on{0};
    run_thread_mesh(topo, [&](Mesh& mesh) {
      ShardedEngine engine(mesh, config, plan_for(name, topo), opts);
      DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 8, 1);
      std::vector<float> before;
      for (int s = 0; s < 3; ++s) {
        if (s == 1) before = engine.gather_master_params();
        EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
        EXPECT_EQ(st.skipped, s == 1) << name << " rank " << mesh.world().rank() << " step " << s;
        EXPECT_TRUE(std::isfinite(st.grad_norm)) << name << ": the gradients stay finite";
        if (st.skipped) {
          ++skipped_on;
          EXPECT_FALSE(std::isfinite(st.loss)) << name << ": the mean loss carries the NaN";
          EXPECT_EQ(st.nonfinite, (NonfiniteVote{.loss_ranks = 1}))
              << name << " rank " << mesh.world().rank();
          EXPECT_EQ(engine.gather_master_params(), before) << "a skipped step must not change the weights";
        }
      }
      EXPECT_EQ(engine.skipped_steps(), 1);
    });
    EXPECT_EQ(skipped_on.load(), 8) << name << ": every rank skips together";
  }
}

// A NaN in one rank's gradient of a range qgZ quantizes: the rank counts the block it quantized, and
// the count is part of the vote every rank reports (the gradient norm turns non-finite as well).
TEST(EngineFaults, NonFiniteQuantizedBlockIsVotedOnEveryRank) {
  const Topology topo = test::topology_for_world(3);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const PartitionPlan plan = plan_for("zeropp", topo);
  ASSERT_TRUE(plan.options().qgz);
  EngineOptions opts = test::engine_options({});
  opts.inject_nan_step = 1;
  opts.inject_nan_rank = 1;
  opts.inject_grad_range = 1;  // the first block: large enough for qgZ to quantize at 3 ranks
  std::atomic<int> skipped_on{0};
  std::mutex mu;
  std::vector<NonfiniteVote> votes;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, opts);
    DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 3, 1);
    for (int s = 0; s < 3; ++s) {
      EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
      EXPECT_EQ(st.skipped, s == 1) << "rank " << mesh.world().rank() << " step " << s;
      EXPECT_EQ(st.nonfinite_quant_blocks > 0, s == 1 && mesh.world().rank() == 1)
          << "rank " << mesh.world().rank() << " step " << s << ": only the poisoned rank quantized it";
      if (st.skipped) {
        ++skipped_on;
        EXPECT_GE(st.nonfinite.quant_blocks, 1u);
        EXPECT_EQ(st.nonfinite.loss_ranks, 0u);
        std::lock_guard lock(mu);
        votes.push_back(st.nonfinite);
      }
    }
  });
  EXPECT_EQ(skipped_on.load(), 3);
  for (const auto& v : votes) EXPECT_EQ(v, votes.front()) << "one vote on every rank";
}

// A finite gradient so large that AdamW's second moment overflows (clipping off): the gradients and
// the norm are finite, the optimizer check finds the update non-finite before it is written, every
// rank skips with the weights unchanged, and the next step trains normally.
TEST(EngineFaults, OptimizerOverflowOnOneRankSkipsOnEveryRank) {
  const Topology topo = test::topology_for_world(3);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (const char* name : {"zero3", "three-level", "ddp", "mics"}) {
    EngineOptions opts = test::engine_options({});
    opts.grad_clip = 0;
    opts.inject_nan_step = 1;
    opts.inject_nan_rank = 2;
    opts.inject_grad_value = 1e30f;  // squared: 1e60, beyond fp32
    std::atomic<int> skipped_on{0};
    run_thread_mesh(topo, [&](Mesh& mesh) {
      ShardedEngine engine(mesh, config, plan_for(name, topo), opts);
      DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 3, 1);
      std::vector<float> before;
      for (int s = 0; s < 3; ++s) {
        if (s == 1) before = engine.gather_master_params();
        EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
        EXPECT_EQ(st.skipped, s == 1) << name << " rank " << mesh.world().rank() << " step " << s;
        EXPECT_TRUE(std::isfinite(st.grad_norm) && std::isfinite(st.loss)) << name << " step " << s;
        if (st.skipped) {
          ++skipped_on;
          EXPECT_GE(st.nonfinite.optim_values, 1u) << name;
          EXPECT_EQ(st.nonfinite.loss_ranks + st.nonfinite.grad_ranks + st.nonfinite.quant_blocks, 0u)
              << name;
          EXPECT_EQ(engine.gather_master_params(), before) << name << ": nothing was written";
        }
      }
      EXPECT_EQ(engine.skipped_steps(), 1);
      for (float w : engine.gather_master_params()) EXPECT_TRUE(std::isfinite(w));
    });
    EXPECT_EQ(skipped_on.load(), 3) << name << ": every rank skips together";
  }
}

// A NaN in one rank's optimizer state stays there: every step from then on is voted non-finite on
// every rank, none writes anything, and after max_nonfinite_steps every rank stops with the same
// TrainingError naming the place.
TEST(EngineFaults, NonFiniteOptimizerStateSkipsThenStopsEveryRank) {
  const Topology topo = test::topology_for_world(3);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (const char* name : {"three-level", "zero1"}) {
    EngineOptions opts = test::engine_options({});
    opts.inject_nan_optim_step = 1;
    opts.inject_nan_optim_rank = 0;
    opts.max_nonfinite_steps = 2;
    std::atomic<int> stopped{0};
    run_thread_mesh(topo, [&](Mesh& mesh) {
      ShardedEngine engine(mesh, config, plan_for(name, topo), opts);
      DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 3, 1);
      std::vector<float> before;
      int s = 0;
      try {
        for (; s < 6; ++s) {
          if (s == 1) before = engine.gather_master_params();
          EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
          EXPECT_EQ(st.skipped, s >= 1) << name << " step " << s;
          if (s >= 1) {
            EXPECT_EQ(st.nonfinite.optim_values, 1u) << name << ": the one poisoned element";
          }
        }
      } catch (const TrainingError& e) {
        EXPECT_EQ(s, 3) << name << ": steps 1 and 2 skipped, the third non-finite one stops";
        EXPECT_NE(std::string(e.what()).find("1 optimizer value(s)"), std::string::npos) << e.what();
        ++stopped;
      }
      EXPECT_EQ(engine.skipped_steps(), 3);
      EXPECT_EQ(engine.gather_master_params(), before) << name << ": no skipped step wrote a weight";
    });
    EXPECT_EQ(stopped.load(), 3) << name << ": every rank stops together";
  }
}

// A restored state is not covered by the last update's finiteness proof: a NaN read into one rank's
// m is counted on the next step, which every rank skips.
TEST(EngineFaults, NonFiniteRestoredStateIsCountedOnTheNextStep) {
  const Topology topo = test::topology_for_world(3);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const EngineOptions opts = test::engine_options({});
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan_for("zero3", topo), opts);
    DataLoader loader(tokens, 2, opts.seq, mesh.world().rank(), 3, 1);
    auto next = [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); };
    for (int s = 0; s < 2; ++s) EXPECT_FALSE(engine.step(next).skipped);
    // This rank's own O shard, read back (zero3: W lies inside O, so restore reads nothing else).
    std::map<std::pair<OptimValue, int>, std::vector<float>> saved;
    for (int r = 0; r < engine.layout().num_ranges(); ++r)
      for (OptimValue which : {OptimValue::master, OptimValue::adam_m, OptimValue::adam_v}) {
        std::vector<float>& values = saved[{which, r}];
        values.resize(engine.optim_span(r).valid_numel);
        engine.read_optim_values(which, r, 0, values.size(), values.data());
      }
    if (mesh.world().rank() == 0)
      saved[{OptimValue::adam_m, 0}].at(0) = std::numeric_limits<float>::quiet_NaN();
    engine.restore(2, 0, [&](OptimValue which, int r, std::size_t, std::size_t n, float* out) {
      const std::vector<float>& v = saved.at({which, r});
      ASSERT_EQ(n, v.size());
      std::copy(v.begin(), v.end(), out);
    });
    const EngineStep st = engine.step(next);
    EXPECT_TRUE(st.skipped) << "rank " << mesh.world().rank();
    EXPECT_EQ(st.nonfinite.optim_values, 1u);
  });
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
