// qgZ measured on the gradient itself: after one step, AdamW's first moment is (1 - beta1) times the
// reduced gradient, so the O shards' m of a plan whose gradients travel as INT4 codes can be held
// against the same plan's m without qgZ, element for element. The quantized reduction must be close
// (relative L2 error 0.14 at 4 ranks and 0.17 at 8, against a limit of 0.25: INT4 rounding of the
// partial sums at each tier; and no systematic shrinkage), and must differ (it does quantize). A wrong scale,
// block offset, slice order or reduction scaling moves the gradient by its own size, where the convergence
// test would only see a loss a few percent off; a model bug moves both runs alike. fp32 mode and no clipping,
// so nothing but qgZ separates them.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "comm/thread_world.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

using test::RunSpec;

// Every rank's O-shard first moments after one step, concatenated in rank order.
std::vector<float> first_moments(const Topology& topo, const PartitionPlan& plan, const GptConfig& config,
                                 const std::vector<std::int32_t>& tokens, const RunSpec& spec) {
  std::vector<std::vector<float>> per_rank(topo.world_size());
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, test::engine_options(spec));
    DataLoader loader(tokens, spec.micro_batch, spec.seq, mesh.world().rank(), mesh.world().size(),
                      spec.seed);
    const EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    EXPECT_FALSE(st.skipped);
    std::vector<float>& mine = per_rank[static_cast<std::size_t>(mesh.world().rank())];
    for (int r = 0; r < engine.layout().num_ranges(); ++r) {
      std::vector<float> m(engine.optim_span(r).valid_numel);
      engine.read_optim_values(OptimValue::adam_m, r, 0, m.size(), m.data());
      mine.insert(mine.end(), m.begin(), m.end());
    }
  });
  std::vector<float> out;
  for (const auto& v : per_rank) out.insert(out.end(), v.begin(), v.end());
  return out;
}

TEST(EngineQgz, ReducedGradientIsTheExactOneWithinInt4Rounding) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec spec;
  spec.steps = 1;
  spec.grad_clip = 0;  // the first moment is the reduced gradient as it arrived
  for (int world : {4, 8}) {
    const Topology topo = test::topology_for_world(world);
    auto plan_with = [&](bool qgz) {
      return test::fp32_quantized_plan("zeropp", topo, spec.micro_batch, /*qwz=*/false, qgz);
    };
    const std::vector<float> exact = first_moments(topo, plan_with(false), config, tokens, spec);
    const std::vector<float> quantized = first_moments(topo, plan_with(true), config, tokens, spec);
    ASSERT_EQ(exact.size(), quantized.size());
    const double error = test::normalized_error(quantized, exact);
    // Shrinkage (or inflation): the error along each element's sign, against the summed magnitude.
    // Rounding to nearest shrinks only the elements it rounds to zero (about 1% here); truncating
    // codes toward zero would shrink every element by half a step on average (about 20%).
    double bias = 0, scale = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      bias += (double(quantized[i]) - exact[i]) * (exact[i] < 0 ? -1.0 : 1.0);
      scale += std::abs(double(exact[i]));
    }
    bias /= scale;
    RecordProperty(fmt::format("world{}_relative_l2_error", world), fmt::format("{:.4f}", error));
    RecordProperty(fmt::format("world{}_relative_bias", world), fmt::format("{:.2e}", bias));
    EXPECT_GT(error, 1e-4) << "world " << world << ": qgZ must quantize";
    EXPECT_LT(error, 0.25) << "world " << world;
    EXPECT_LT(std::abs(bias), 0.05) << "world " << world
                                    << ": rounding to nearest neither shrinks nor inflates";
    std::printf("world %d: qgZ gradient relative L2 error %.4f, shrinkage %.2e\n", world, error, bias);
  }
}

}  // namespace
}  // namespace tz
