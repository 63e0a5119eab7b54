// qwZ measured exactly: the first step's loss of a plan whose weights travel as INT8 codes is the
// single process's loss on the same initial weights quantized and dequantized block by block, as
// each rank's W shard is (blocks from the shard's start, padding included). The tolerance comes from
// the quantization itself: the engine must sit within 2% of the loss change quantization causes
// (|L_quantized - L_fp32| of one process) from the quantized reference, plus twice the sharded run's
// own distance from one process unquantized, so a bug in the scales, the rounding, the
// block offsets or the route moves it off, while a model bug moves both sides alike. fp32 mode, so
// nothing but the quantization separates the runs; world sizes 3 and 8.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "device/cpu/block_quantize.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"
#include "plan/shard_layout.hpp"

namespace tz {
namespace {

using test::RunSpec;

double first_step_loss(const Topology& topo, const PartitionPlan& plan, const GptConfig& config,
                       const std::vector<std::int32_t>& tokens, const RunSpec& spec) {
  double loss = 0;
  std::mutex mu;
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, test::engine_options(spec));
    DataLoader loader(tokens, spec.micro_batch, spec.seq, mesh.world().rank(), mesh.world().size(),
                      spec.seed);
    const EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
    if (mesh.world().rank() == 0) {
      std::lock_guard lock(mu);
      loss = st.loss;
    }
  });
  return loss;
}

// The initial weights as the W shards of `layout` carry them through qwZ.
std::vector<float> quantized_weights(const std::vector<float>& w, const ParameterLayout& params,
                                     const ShardLayout& layout, const QuantOptions& q) {
  std::vector<float> out = w;
  for (int i = 0; i < layout.num_ranges(); ++i) {
    const auto& r = params.ranges()[static_cast<std::size_t>(i)];
    const std::size_t padded = layout.padded_numel(i), shard = layout.shard_numel(ModelState::w_fwd, i);
    std::vector<float> buf(padded, 0.f), back(padded);
    std::copy(w.begin() + r.offset, w.begin() + r.offset + r.numel, buf.begin());
    std::vector<std::uint8_t> codes(quantized_bytes(shard, q));
    for (std::size_t k = 0; k < padded / shard; ++k) {
      quantize_ref(buf.data() + k * shard, DType::f32, shard, codes.data(), q);
      dequantize_ref(codes.data(), shard, back.data() + k * shard, DType::f32, q);
    }
    std::copy(back.begin(), back.begin() + r.numel, out.begin() + r.offset);
  }
  return out;
}

TEST(EngineQwz, FirstStepLossIsTheSingleProcessOnQuantizedWeights) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  RunSpec spec;
  spec.steps = 1;
  for (int world : {3, 8}) {
    const Topology topo = test::topology_for_world(world);
    auto plan_with = [&](bool qwz) {
      return test::fp32_quantized_plan("zero3", topo, spec.micro_batch, qwz, /*qgz=*/false);
    };
    const PartitionPlan quantized = plan_with(true);
    const double engine_q = first_step_loss(topo, quantized, config, tokens, spec);
    const double engine_fp = first_step_loss(topo, plan_with(false), config, tokens, spec);

    // The single process on the initial weights, and on the weights qwZ delivers.
    auto single_first_loss = [&](bool quantize) {
      SingleTrainer trainer(config, reference_options(test::train_run(spec, world)));
      if (quantize) {
        const ParameterLayout& params = trainer.layout();
        std::vector<RangeSpec> ranges;
        for (const auto& r : params.ranges()) ranges.push_back({r.name, r.numel});
        const ShardLayout layout(ranges, topo, quantized);
        const std::vector<float> w0(trainer.params().begin(), trainer.params().end());
        const std::vector<float> wq =
            quantized_weights(w0, params, layout, {.bits = QuantBits::int8, .block_size = 32});
        EXPECT_NE(wq, w0);
        std::copy(wq.begin(), wq.end(), trainer.params().begin());
      }
      DataLoader loader = DataLoader::union_of_ranks(tokens, spec.micro_batch, spec.seq, world, spec.seed);
      return double(trainer.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); }).loss);
    };
    const double ref_q = single_first_loss(true), ref_fp = single_first_loss(false);

    const double effect = std::abs(ref_q - ref_fp);     // what quantizing the weights does to the loss
    const double noise = std::abs(engine_fp - ref_fp);  // sharded vs one process, unquantized, fp32
    ASSERT_GT(effect, 10 * noise) << "world " << world << ": quantization must move the loss measurably";
    EXPECT_LE(std::abs(engine_q - ref_q), 0.02 * effect + 2 * noise)
        << "world " << world << ": engine with qwZ " << engine_q << ", one process on quantized weights "
        << ref_q << "; unquantized: engine " << engine_fp << ", one process " << ref_fp;
    RecordProperty(fmt::format("world{}_quant_effect", world), fmt::format("{:.3e}", effect));
    RecordProperty(fmt::format("world{}_engine_minus_ref", world), fmt::format("{:.3e}", engine_q - ref_q));
    RecordProperty(fmt::format("world{}_fp32_noise", world), fmt::format("{:.3e}", noise));
  }
}

}  // namespace
}  // namespace tz
