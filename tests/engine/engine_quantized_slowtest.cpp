// Quantized plans converge: ZeRO++ with qwZ (INT8 weights) and qgZ (INT4
// gradients), and the three-level plan with both, train the default corpus for 200 steps on the
// 8-rank frontier-mini topology to a final loss within 5% of the unquantized run.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "data/token_data.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"
#include "quant/qgz_reduce_scatter.hpp"

namespace tz {
namespace {

// Mean loss of the last `tail` steps of a run (one step's loss is noisy).
double final_loss(const Topology& topo, const PartitionPlan& plan, const GptConfig& config,
                  const std::vector<std::int32_t>& tokens, int steps, int tail) {
  EngineOptions opts;
  opts.seq = 32;
  opts.adamw = {.lr = 3e-3f, .weight_decay = 0.0f};
  opts.schedule = {.max_lr = 3e-3f, .min_lr = 3e-4f, .warmup_steps = 10, .decay_steps = steps};
  opts.seed = 3;
  double result = 0;
  std::mutex mu;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, opts);
    DataLoader loader(tokens, plan.options().micro_batch_size, opts.seq, mesh.world().rank(),
                      mesh.world().size(), 3);
    double sum = 0;
    for (int s = 0; s < steps; ++s) {
      EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
      EXPECT_FALSE(st.skipped);
      if (s >= steps - tail) sum += st.loss;
    }
    if (mesh.world().rank() == 0) {
      std::lock_guard lock(mu);
      result = sum / tail;
    }
  });
  return result;
}

TEST(EngineQuantized, QuantizedPlansConvergeWithinFivePercentOfUnquantized) {
  const Topology topo = Topology::load("frontier-mini");
  const GptConfig config{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 256};
  const TokenData corpus = load_fortunes_corpus();
  const std::vector<std::int32_t> tokens(corpus.tokens.begin(), corpus.tokens.begin() + 400000);
  auto with = [](PartitionPlan p, bool quantized) {
    PlanOptions o = p.options();
    o.qwz = o.qgz = quantized;
    o.quant_block = 64;
    o.micro_batch_size = 2;
    return p.with_options(o);
  };
  const int steps = 200, tail = 20;
  const std::size_t fallbacks = qgz_fallback_count();
  const double base =
      final_loss(topo, with(PartitionPlan::preset("zero3", topo), false), config, tokens, steps, tail);
  for (const char* name : {"zeropp", "three-level"}) {
    const double q =
        final_loss(topo, with(PartitionPlan::preset(name, topo), true), config, tokens, steps, tail);
    EXPECT_LE(std::abs(q - base), 0.05 * base) << name << " quantized " << q << " vs unquantized " << base;
    RecordProperty(std::string(name) + "_final_loss", std::to_string(q));
  }
  RecordProperty("zero3_final_loss", std::to_string(base));
  // The block ranges took the quantized path (only the tiny LayerNorm range may fall back).
  EXPECT_LE(qgz_fallback_count() - fallbacks, static_cast<std::size_t>(2 * 8 * steps))
      << "qgZ fell back too often";
  const double unigram = unigram_entropy_nats(tokens);
  EXPECT_LT(base, 0.97 * unigram) << "the model should learn the corpus below its unigram entropy "
                                  << unigram;
}

}  // namespace
}  // namespace tz
