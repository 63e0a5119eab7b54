// Gradient accumulation against one process: with k = 2 and 4 micro-batches per step in bf16 mode (and
// k = 2 in fp32 mode), every preset plan (zeropp as hpZ alone, three-level also with flat collectives)
// trains as one process that accumulates the same k micro-batches of all ranks' rows, at 1, 2, 3, 4 and
// 8 ranks; so does the quantized zeropp preset in bf16 at 2, 3, 4 and 8. Per micro-batch the engine adds
// each range's reduced gradient into the G shard, or, where G is whole on every rank (ddp and zero1;
// every plan at 1 rank; mics and three-level at 3, whose nodes hold one rank each), the backward adds
// into G in place; the reference accumulates in one model's gradient buffer, through neither. The
// tolerances are derived below, tight enough that keeping only the last micro-batch's gradient, on
// either path, fails every plan at every world size where that path is taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine_test_util.hpp"

namespace tz {
namespace {

using test::RunSpec;

constexpr int kSteps = 4;

// Tolerances of a run against the reference, all relative: the loss and the gradient norm at every
// step, the final parameters as a normalized error.
struct Tolerance {
  double loss = 0, grad_norm = 0, params = 0;
};

// What separates a lost micro-batch from rounding, in bf16 mode. Write u = 2^-8 for bf16's unit
// roundoff (8 significant bits) and delta for the fraction of its size by which an element's update
// differs from the reference's (AdamW moves each element by about lr along m / sqrt(v), whatever the
// gradient's scale).
//  - Gradient norm, every step: each element the engine reduces went through a few roundings to bf16
//    (the weights it was computed from, the narrowing for the reduction, one per reduction hop), each
//    of relative size u at most; a norm is off by no more than its elements' relative error (triangle
//    inequality), and from the second step on the weights' drift (below) adds about as much: 4u, 1.6e-2.
//    A G shard holding only the last micro-batch holds g_k / k where the mean of g_1 .. g_k belongs;
//    with g_i = mu + noise of variance s^2, |g_k|^2 / k^2 ~ (|mu|^2 + s^2) / k^2 against
//    |mu|^2 + s^2 / k, a ratio of 1 / sqrt(k) at most (in expectation): the norm is off by about
//    1 - 1 / sqrt(2) = 0.29 or more at k = 2 and 0.5 or more at k = 4, from the first step on (these
//    runs: 0.29 at the first step, 18x the tolerance; 0.35 and more over the four).
//  - Final parameters: were every element's updates all off by their whole size, the normalized error
//    would be S = sum_t lr_t sqrt(n) / |p| (0.105 here: 4 steps with sum lr = 9.2e-3, n = 16344
//    parameters, |p| = 11.2); updates off by delta leave delta S. Rounding makes delta a few u (these
//    runs: under 4u, parameters off by 1.5e-3 at most); the tolerance allows delta = 1/16 = 16u, 6.5e-3.
//    A lost micro-batch makes the gradient another one, delta of order 1 (parameters off by 0.048 at
//    least, 7x the tolerance).
//  - Loss, every step: a logit is a dot product of C = 24 unit-scale activations with weights that differ
//    by eps each, so it moves by about sqrt(C) eps (independent signs), and so does the loss (about
//    ln V = 4.1); eps = u sigma from rounding the initial weights (sigma = 0.02, their scale) plus
//    delta sum lr from the updates: 7.8e-4 relative (these runs: 4e-5 at most; a lost micro-batch
//    2.4e-3 and more).
constexpr double kBf16Roundoff = 1.0 / 256;
constexpr double kBf16NormTolerance = 4 * kBf16Roundoff;
constexpr double kBf16UpdateError = 16 * kBf16Roundoff;
constexpr double kInitScale = 0.02;  // gpt2_init's standard deviation

// The quantized zeropp preset: qgZ sends the gradient as INT4 codes (relative L2 error up to 0.25,
// EngineQgz) and qwZ the weights as INT8. Rounding to nearest is unbiased, so the reduced gradient's norm
// grows by about sqrt(1 + 0.25^2) - 1 = 3%, and the INT8 weights and the drift add as much again over
// the steps: 0.1 (these runs: 3.5e-2 at most), a third of the 0.29 that a lost micro-batch costs. The
// updates, though, are off by a delta of 0.2 (parameters off by 1.8e-2 = 0.17 S), the order of a lost
// micro-batch's: loss and parameters are held only to delta = 1/2, the norm tells the two apart.
constexpr double kQuantizedNormTolerance = 0.1;
constexpr double kQuantizedUpdateError = 0.5;

// fp32 mode: the engine and the reference differ only in the order of fp32 additions (2^-24 each),
// which AdamW amplifies where a gradient element nearly cancels; EngineParity's fp32 tolerances hold with
// room (these runs: loss 1.2e-7, norm 4e-8, parameters 3.7e-7 at most), and a lost micro-batch's
// errors (the same as in bf16 above) are 240 (loss) to 4800 (parameters) times them.
constexpr Tolerance kFp32Tolerance{.loss = 1e-5, .grad_norm = 1e-4, .params = 1e-5};

// The loss and parameter tolerances above for the reference's run of the tiny model, with updates off
// by `delta`; the norm's is given.
Tolerance rounding_tolerance(const GptConfig& config, const test::ReferenceRun& ref, double norm_tolerance,
                             double delta) {
  double sum_lr = 0, p2 = 0;
  for (const StepRecord& s : ref.steps) sum_lr += s.lr;
  for (float x : ref.params) p2 += double(x) * x;
  const double whole_updates = sum_lr * std::sqrt(double(ref.params.size()) / p2);  // S
  const double eps = kBf16Roundoff * kInitScale + delta * sum_lr;
  return {.loss = std::sqrt(double(config.n_embd)) * eps / std::log(double(config.vocab_size)),
          .grad_norm = norm_tolerance,
          .params = delta * whole_updates};
}

double relative(double got, double want) {
  return std::abs(got - want) / std::abs(want);
}

// The largest errors of `got` against `ref` within `tol`; recorded as a property of the test (`key`).
void expect_within(const test::EngineRun& got, const test::ReferenceRun& ref, const Tolerance& tol,
                   const std::string& key, const std::string& what) {
  ASSERT_EQ(got.steps.size(), ref.steps.size()) << what;
  double loss = 0, norm = 0;
  std::size_t loss_at = 0, norm_at = 0;
  for (std::size_t i = 0; i < ref.steps.size(); ++i) {
    EXPECT_FALSE(got.steps[i].skipped) << what << " step " << i;
    const double l = relative(got.steps[i].loss, ref.steps[i].loss);
    const double g = relative(got.steps[i].grad_norm, ref.steps[i].grad_norm);
    if (l > loss) std::tie(loss, loss_at) = std::pair{l, i};
    if (g > norm) std::tie(norm, norm_at) = std::pair{g, i};
  }
  const double params = test::normalized_error(got.params, ref.params);
  EXPECT_LE(norm, tol.grad_norm) << what << " step " << norm_at << ": gradient norm "
                                 << got.steps[norm_at].grad_norm << " vs " << ref.steps[norm_at].grad_norm;
  EXPECT_LE(params, tol.params) << what << ": final parameters (normalized error)";
  EXPECT_LE(loss, tol.loss) << what << " step " << loss_at << ": loss " << got.steps[loss_at].loss << " vs "
                            << ref.steps[loss_at].loss;
  ::testing::Test::RecordProperty(
      key, fmt::format("loss {:.2e}/{:.2e} norm {:.2e}/{:.2e} params {:.2e}/{:.2e}", loss, tol.loss, norm,
                       tol.grad_norm, params, tol.params));
}

// Every plan of `plans` at `world` ranks with each accumulation k of `accumulations`, against one
// process that takes the same k micro-batches of all ranks' rows per step (batch world x B,
// DataLoader::union_of_ranks). quant_block > 0: the plans' quantization block.
template <typename ToleranceFn>
void expect_accumulation(int world, const std::vector<test::PlanCase>& plans, DTypeMode mode,
                         std::initializer_list<int> accumulations, int quant_block,
                         const ToleranceFn& tolerance) {
  const Topology topo = test::topology_for_world(world);
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  for (int k : accumulations) {
    RunSpec spec;
    spec.grad_accum = k;
    spec.steps = kSteps;
    const test::ReferenceRun ref = test::reference_run(config, tokens, world, spec);
    const Tolerance tol = tolerance(config, ref);
    for (const test::PlanCase& pc : plans) {
      PartitionPlan plan = test::with_run_options(pc.make(topo), spec, mode);
      if (quant_block > 0) {
        PlanOptions o = plan.options();
        o.quant_block = quant_block;
        plan = plan.with_options(o);
      }
      const test::EngineRun got =
          test::run_engine(topo, plan, config, tokens, spec, test::engine_options(spec));
      expect_within(
          got, ref, tol, fmt::format("{}_k{}", pc.name, k),
          fmt::format("{} ({}) on {} ranks, accumulation {}", pc.name, dtype_mode_name(mode), world, k));
    }
  }
}

class EngineAccumulationParity : public ::testing::TestWithParam<int> {};

TEST_P(EngineAccumulationParity, EveryPresetSumsEveryMicroBatchInBf16) {
  expect_accumulation(GetParam(), test::unquantized_presets(), DTypeMode::bf16, {2, 4}, 0,
                      [](const GptConfig& c, const test::ReferenceRun& ref) {
                        return rounding_tolerance(c, ref, kBf16NormTolerance, kBf16UpdateError);
                      });
}

// The fp32 branch of the adding into G (and of the gradients' travel); more micro-batches take no other
// path than in bf16.
TEST_P(EngineAccumulationParity, EveryPresetSumsEveryMicroBatchInFp32) {
  expect_accumulation(GetParam(), test::unquantized_presets(), DTypeMode::fp32, {2}, 0,
                      [](const GptConfig&, const test::ReferenceRun&) { return kFp32Tolerance; });
}

INSTANTIATE_TEST_SUITE_P(Worlds, EngineAccumulationParity, ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) { return fmt::format("world{}", info.param); });

class EngineAccumulationQuantized : public ::testing::TestWithParam<int> {};

// 32-element blocks, so that the tiny model's ranges take the quantized paths.
TEST_P(EngineAccumulationQuantized, ZeroppSumsEveryMicroBatchInBf16) {
  const test::PlanCase zeropp{"zeropp", [](const Topology& t) { return PartitionPlan::preset("zeropp", t); }};
  expect_accumulation(GetParam(), {zeropp}, DTypeMode::bf16, {2, 4}, 32,
                      [](const GptConfig& c, const test::ReferenceRun& ref) {
                        return rounding_tolerance(c, ref, kQuantizedNormTolerance, kQuantizedUpdateError);
                      });
}

// One rank quantizes nothing (no collective carries weights or gradients).
INSTANTIATE_TEST_SUITE_P(Worlds, EngineAccumulationQuantized, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return fmt::format("world{}", info.param); });

}  // namespace
}  // namespace tz
