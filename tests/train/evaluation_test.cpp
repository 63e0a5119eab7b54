// Evaluation between steps changes no training state: the next training step is bitwise the same
// (loss, gradient norm, every master weight) with or without it, for plans with sharded, secondary,
// quantized and replicated states at odd and even world sizes; every rank gets the same validation
// loss, which equals the single-process loss on the union of the ranks' batches; and the loop
// evaluates exactly where it is asked to.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "engine/engine_test_util.hpp"
#include "model/param_source.hpp"
#include "plan/partition_plan.hpp"
#include "train/train_session.hpp"

namespace tz {
namespace {

using test::RunSpec;

constexpr double kEvalVsReference = 1e-5;  // fp32 mode: the engine's loss vs one process, relative

struct Outcome {
  std::vector<float> eval_losses;  // rank by rank
  EngineStep second;               // rank 0's second step
  std::vector<float> params;       // after it
};

PartitionPlan plan_for(const std::string& name, const Topology& topo, const RunSpec& s, DTypeMode mode) {
  PartitionPlan p = PartitionPlan::preset(name, topo);
  PlanOptions o = p.options();
  o.dtype_mode = mode;
  o.micro_batch_size = s.micro_batch;
  o.grad_accum_steps = s.grad_accum;
  return p.with_options(o);
}

Outcome run(const Topology& topo, const PartitionPlan& plan, const std::vector<std::int32_t>& train,
            const std::vector<std::int32_t>& val, const RunSpec& s, bool evaluate) {
  Outcome out;
  out.eval_losses.assign(topo.world_size(), 0.0f);
  std::mutex mu;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const int rank = mesh.world().rank(), world = mesh.world().size();
    ShardedEngine engine(mesh, test::tiny_gpt(), plan, test::engine_options(s));
    DataLoader loader(train, s.micro_batch, s.seq, rank, world, s.seed);
    DataLoader val_loader(val, s.micro_batch, s.seq, rank, world, 0);
    const BatchFn next = [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); };
    engine.step(next);
    float eval_loss = 0;
    if (evaluate)
      eval_loss = engine.evaluate([&](std::int32_t* in, std::int32_t* tg) { val_loader.next(in, tg); }, 3);
    const EngineStep second = engine.step(next);
    std::vector<float> params = engine.gather_master_params();
    std::lock_guard<std::mutex> lock(mu);
    out.eval_losses[rank] = eval_loss;
    if (rank == 0) {
      out.second = second;
      out.params = std::move(params);
    }
  });
  return out;
}

TEST(Evaluation, ChangesNoTrainingStateAndAgreesEverywhere) {
  const RunSpec s{.seq = 8, .micro_batch = 2, .grad_accum = 2, .steps = 2};
  const auto train = test::synthetic_tokens(4000, test::tiny_gpt().vocab_size);
  const auto val = test::synthetic_tokens(3000, test::tiny_gpt().vocab_size, 99);
  for (int world : {1, 3, 4}) {
    const Topology topo = test::topology_for_world(world);
    for (const std::string name : {"zero3", "zeropp", "three-level", "ddp"})
      for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16}) {
        SCOPED_TRACE(
            fmt::format("{} at {} ranks, {}", name, world, mode == DTypeMode::fp32 ? "fp32" : "bf16"));
        const PartitionPlan plan = plan_for(name, topo, s, mode);
        const Outcome with = run(topo, plan, train, val, s, true),
                      without = run(topo, plan, train, val, s, false);
        EXPECT_EQ(with.second.loss, without.second.loss);
        EXPECT_EQ(with.second.grad_norm, without.second.grad_norm);
        EXPECT_EQ(with.params, without.params);
        for (int r = 1; r < world; ++r) EXPECT_EQ(with.eval_losses[r], with.eval_losses[0]) << "rank " << r;
        EXPECT_TRUE(std::isfinite(with.eval_losses[0]));
      }
  }
}

TEST(Evaluation, EqualsTheSingleProcessLossOfTheRanksBatches) {
  const RunSpec s{.seq = 8, .micro_batch = 2, .grad_accum = 1, .steps = 1};
  const auto train = test::synthetic_tokens(4000, test::tiny_gpt().vocab_size);
  const auto val = test::synthetic_tokens(3000, test::tiny_gpt().vocab_size, 99);
  for (int world : {2, 3}) {
    const Topology topo = test::topology_for_world(world);
    const Outcome got = run(topo, plan_for("zero3", topo, s, DTypeMode::fp32), train, val, s, true);
    // One process after one step, on the union of the ranks' validation batches, 3 batches.
    SingleTrainer trainer(test::tiny_gpt(), reference_options(test::train_run(s, world)));
    DataLoader loader = DataLoader::union_of_ranks(train, s.micro_batch, s.seq, world, s.seed);
    trainer.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    DataLoader val_union = DataLoader::union_of_ranks(val, s.micro_batch, s.seq, world, 0);
    std::vector<std::int32_t> in(static_cast<std::size_t>(world) * s.micro_batch * s.seq), tg(in.size());
    ResidentParams source(trainer.layout(), trainer.params().data(), nullptr);
    double loss = 0;
    for (int k = 0; k < 3; ++k) {
      val_union.next(in.data(), tg.data());
      loss += trainer.model().forward(source, in.data(), tg.data());
    }
    loss /= 3;
    EXPECT_NEAR(got.eval_losses[0], loss, kEvalVsReference * loss) << world << " ranks";
  }
}

TEST(Evaluation, TheLoopEvaluatesWhereAsked) {
  const RunSpec s{.seq = 8, .micro_batch = 2, .grad_accum = 1, .steps = 7};
  const auto train = test::synthetic_tokens(4000, test::tiny_gpt().vocab_size);
  const auto val = test::synthetic_tokens(3000, test::tiny_gpt().vocab_size, 99);
  for (int every : {0, 3}) {
    std::vector<int> at;
    run_thread_mesh(test::topology_for_world(2), [&](Mesh& mesh) {
      const TrainRun tr = test::train_run(s, 2);
      ShardedEngine engine(mesh, test::tiny_gpt(), tr.plan, tr.engine);
      DataLoader loader(train, s.micro_batch, s.seq, mesh.world().rank(), 2, s.seed);
      DataLoader vl(val, s.micro_batch, s.seq, mesh.world().rank(), 2, 0);
      const DataCursor start = vl.cursor();
      std::vector<float> losses;
      Evaluation eval{.every = every,
                      .batches = 2,
                      .next_batch = [&](std::int32_t* in, std::int32_t* tg) { vl.next(in, tg); },
                      .rewind = [&] { vl.restore(start); }};
      std::vector<int> mine;
      run_training(mesh, engine, tr, [&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); },
                   {.on_step =
                        [&](const TrainStep& t) {
                          if (mesh.world().rank() == 0) {
                            EXPECT_LE(t.min_step_s, t.engine.seconds);
                            EXPECT_GE(t.max_step_s, t.engine.seconds);
                          }
                        },
                    .eval = &eval,
                    .on_eval =
                        [&](const EvalRecord& r) {
                          mine.push_back(r.step);
                          losses.push_back(r.loss);
                        }});
      if (mesh.world().rank() == 0) at = mine;
      // Rewound each time: with no training in between two evaluations would agree; here at least
      // every evaluation is finite and the last is below the first (the model learned).
      EXPECT_LT(losses.back(), losses.front());
    });
    EXPECT_EQ(at, every == 0 ? std::vector<int>({0, 7}) : std::vector<int>({0, 3, 6, 7}))
        << "every " << every;
  }
}

}  // namespace
}  // namespace tz
