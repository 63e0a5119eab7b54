#include "plan/step_schedule.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "plan_test_util.hpp"

namespace tz {
namespace {

using plan_test::flat;
using plan_test::mini;
using plan_test::small_ranges;

// gcd x2, node x1, system x3: a fan-out of 1 inside a tier set.
Topology test_topology_2x1x3() {
  return Topology::from_json(nlohmann::json::parse(R"({"name": "t2x1x3", "tiers": [
               {"name": "gcd", "fanout": 2, "bandwidth_GBps": 200, "latency_us": 2},
               {"name": "node", "fanout": 1, "bandwidth_GBps": 50, "latency_us": 3},
               {"name": "system", "fanout": 3, "bandwidth_GBps": 12.5, "latency_us": 5}]})"),
                             "test")
      .resolve(6);
}

// Hand-checked table over small_ranges(), padded to 8 ranks: emb 16, h0 32, h1 8. The embedding is
// tied: acquired at the start of forward and again for the LM head at the end; backward starts with
// the head.
AcquisitionOrder tied_order() {
  return {{0, 1, 2, 0}, {0, 2, 1, 0}};
}

std::map<std::string, double> bytes(const PartitionPlan& plan, const Topology& t = mini(),
                                    const std::vector<RangeSpec>& ranges = small_ranges(),
                                    const AcquisitionOrder& order = tied_order()) {
  return StepSchedule(ShardLayout(ranges, t, plan), order).bytes_per_tier();
}

void expect_bytes(const std::map<std::string, double>& got, const std::map<std::string, double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [tier, b] : want) EXPECT_NEAR(got.at(tier), b, 1e-9 * (1 + b)) << tier;
}

TEST(QuantizedBytes, CodesPaddedToBlocksPlusOneScalePerBlock) {
  EXPECT_EQ(quantized_bytes(0, 8, 32), 0u);
  EXPECT_EQ(quantized_bytes(1, 8, 32), 36u);
  EXPECT_EQ(quantized_bytes(32, 8, 32), 36u);
  EXPECT_EQ(quantized_bytes(33, 8, 32), 72u);
  EXPECT_EQ(quantized_bytes(33, 4, 32), 40u);  // 2 blocks x (16 code bytes + 4)
  EXPECT_EQ(quantized_bytes(512, 8, 256), 2u * 260u);
  EXPECT_EQ(quantized_bytes(512, 4, 256), 2u * 132u);
  // The ratios against bf16 the quant helper is held to (block 256): qwZ <= 0.53, qgZ <= 0.28.
  EXPECT_LE(quantized_bytes(1 << 20, 8, 256) / double(2 << 20), 0.53);
  EXPECT_LE(quantized_bytes(1 << 20, 4, 256) / double(2 << 20), 0.28);
}

TEST(StepSchedule, BackwardReusesTheMirroredForwardTail) {
  const Topology t = mini();
  const ShardLayout l(small_ranges(), t, PartitionPlan::preset("zero3", t));
  EXPECT_EQ(StepSchedule(l, tied_order()).reused_in_backward(), 2);  // head, then the last block
  const ShardLayout l0(small_ranges(), t,
                       PartitionPlan::preset("zero3", t).with_options({.prefetch_depth = 0}));
  EXPECT_EQ(StepSchedule(l0, tied_order()).reused_in_backward(), 1);
  EXPECT_EQ(StepSchedule(l, AcquisitionOrder{{0, 1, 2}, {0, 1, 2}}).reused_in_backward(), 0);
  EXPECT_EQ(StepSchedule(l, sequential_order(3)).reused_in_backward(), 2);
  plan_test::expect_input_error(
      [&] {
        StepSchedule(l, AcquisitionOrder{{0, 1}, {1, 0}});
      },
      {"range 2 'h1' is never acquired in forward"});
  plan_test::expect_input_error(
      [&] {
        StepSchedule(l, AcquisitionOrder{{0, 1, 2}, {2, 0}});
      },
      {"range 1 'h0' is never acquired in backward"});
  plan_test::expect_input_error(
      [&] {
        StepSchedule(l, AcquisitionOrder{{0, 1, 2, 3}, {2, 1, 0}});
      },
      {"forward names range 3", "3 ranges"});
}

// zero3 (bf16): an all-gather of a padded range of P elements over the world moves P bytes on gcd, P/2
// on node, P/4 on system; a reduce-scatter the same. Forward P = 16+32+8+16 = 72; backward regathers
// h0 and emb (48; head and h1 reused); gradients reduced once per range (56); f64 scalars over the
// world, whole on every tier: the grad norm and the loss 8 bytes each, the non-finite vote 4 x 8.
TEST(StepSchedule, Zero3BytesPerTierByHand) {
  const auto b = bytes(PartitionPlan::preset("zero3", mini()));
  expect_bytes(b, {{"gcd", 72 + 48 + 56 + 48}, {"node", 36 + 24 + 28 + 48}, {"system", 18 + 12 + 14 + 48}});
}

// zeropp, block 32, ranges padded to emb 512, h0 1000, h1 256. qwZ: W_fwd shards of 64, 125, 32
// elements quantize to 2, 4, 1 INT8 blocks of 36 bytes = s; a gather moves 4s / 2s / s (gcd / node /
// system); forward s = 72 + 144 + 36 + 72 = 324. hpZ backward: bf16 over gcd+node from the secondary
// shard, P on gcd and P/2 on node for h0 + emb (1512). qgZ per range P: gcd qb4(P/2), node qb4(P/4),
// system qb4(P/8) with qb4(n) = ceil(n/32) * 20: h1 80/40/20, h0 320/160/80, emb 160/80/40.
TEST(StepSchedule, ZeroppBytesPerTierByHand) {
  const std::vector<RangeSpec> ranges = {{"emb", 512}, {"h0", 1000}, {"h1", 256}};
  const PartitionPlan plan =
      PartitionPlan::preset("zeropp", mini()).with_options({.qwz = true, .qgz = true, .quant_block = 32});
  const auto b = bytes(plan, mini(), ranges);
  expect_bytes(
      b, {{"gcd", 1296 + 1512 + 560 + 48}, {"node", 648 + 756 + 280 + 48}, {"system", 324 + 0 + 140 + 48}});
  const StepSchedule s(ShardLayout(ranges, mini(), plan), tied_order());
  int qgz = 0, qwz = 0;
  for (const auto& c : s.collectives()) {
    if (c.kind == CollectiveKind::all_to_all) {
      ++qgz;
      EXPECT_EQ(c.quant_bits, 4);
    }
    if (c.quant_bits == 8) {
      ++qwz;
      EXPECT_EQ(c.purpose, CollectivePurpose::weight_gather_fwd);
    }
  }
  EXPECT_EQ(qgz, 3);
  EXPECT_EQ(qwz, 4);
}

// qgZ on slices too small to pay (quant/qgz_reduce_scatter.hpp) falls back to an fp32 reduce-scatter,
// and the schedule says so: the small table's last-tier slices are 1..4 elements (20 bytes quantized).
TEST(StepSchedule, QgzFallbackIsAnFp32ReduceScatter) {
  const PartitionPlan plan =
      PartitionPlan::preset("zeropp", mini()).with_options({.qgz = true, .quant_block = 32});
  const StepSchedule s(ShardLayout(small_ranges(), mini(), plan), tied_order());
  int reductions = 0;
  for (const auto& c : s.collectives()) {
    if (c.purpose != CollectivePurpose::grad_reduce) continue;
    ++reductions;
    EXPECT_EQ(c.kind, CollectiveKind::reduce_scatter);
    EXPECT_EQ(c.dtype, DType::f32);
    EXPECT_EQ(c.quant_bits, 0);
  }
  EXPECT_EQ(reductions, 3);
  // fp32 reduce-scatter of P = 56 elements: 2P on gcd, P on node, P/2 on system.
  const auto bwd = s.bytes_per_tier(StepPhase::backward);
  EXPECT_NEAR(bwd.at("gcd"), 48 + 112, 1e-9);
  EXPECT_NEAR(bwd.at("system"), 0 + 28, 1e-9);
}

// three-level (bf16): W on gcd: gathers move P on gcd only (forward 72, backward 48). G on node:
// reduce-scatter over gcd+node: P on gcd, P/2 on node (56). Boundary: G shard (P/4 fp32 = P bytes)
// reduce-scattered over system: P/2 (28). Refresh from O (P/8) to W (P/2) over node+system in bf16:
// system P/4 (14), node P/2 (28). Scalars: 48 per tier (norm and loss 8 each, the vote 32).
TEST(StepSchedule, ThreeLevelBytesPerTierByHand) {
  const auto b = bytes(PartitionPlan::preset("three-level", mini()));
  expect_bytes(b, {{"gcd", 72 + 48 + 56 + 48}, {"node", 28 + 48 + 28}, {"system", 28 + 48 + 14}});
  // Accumulating 4 micro-batches repeats forward and backward, not the boundary.
  const auto b4 = bytes(PartitionPlan::preset("three-level", mini()).with_options({.grad_accum_steps = 4}));
  expect_bytes(b4, {{"gcd", 4 * (72 + 48 + 56) + 48}, {"node", 4 * 28 + 48 + 28}, {"system", 28 + 48 + 14}});
}

// The per-tier steps of a three-tier all-gather: outer tier first, payload growing by each fan-out.
TEST(StepSchedule, HierarchicalStepOrderAndPayloads) {
  const StepSchedule s(ShardLayout(small_ranges(), mini(), PartitionPlan::preset("zero3", mini())),
                       tied_order());
  const ScheduledCollective& first = s.collectives().front();
  EXPECT_EQ(first.purpose, CollectivePurpose::weight_gather_fwd);
  EXPECT_EQ(first.range, 0);
  EXPECT_EQ(first.count, 2u);
  ASSERT_EQ(first.steps.size(), 3u);
  EXPECT_EQ(first.steps[0].tier, 2);
  EXPECT_EQ(first.steps[0].payload_bytes, 8u);
  EXPECT_EQ(first.steps[1].tier, 1);
  EXPECT_EQ(first.steps[1].payload_bytes, 16u);
  EXPECT_EQ(first.steps[2].tier, 0);
  EXPECT_EQ(first.steps[2].payload_bytes, 32u);
  // The first gradient reduction is h1's (last use at backward position 1), inner tier first.
  auto rs = std::find_if(s.collectives().begin(), s.collectives().end(), [](const ScheduledCollective& c) {
    return c.purpose == CollectivePurpose::grad_reduce;
  });
  ASSERT_NE(rs, s.collectives().end());
  EXPECT_EQ(rs->range, 2);
  ASSERT_EQ(rs->steps.size(), 3u);
  EXPECT_EQ(rs->steps[0].tier, 0);
  EXPECT_EQ(rs->steps[0].payload_bytes, 16u);
  EXPECT_EQ(rs->steps[2].tier, 2);
  EXPECT_EQ(rs->steps[2].payload_bytes, 4u);
  // The global norm and the non-finite vote close the step (zero3 has no refresh: W is O's shard).
  ASSERT_GE(s.collectives().size(), 2u);
  EXPECT_EQ(s.collectives().end()[-2].purpose, CollectivePurpose::grad_norm);
  EXPECT_EQ(s.collectives().back().purpose, CollectivePurpose::nonfinite_flag);
  EXPECT_EQ(s.collectives().back().count, kNonfiniteVoteCount);
  EXPECT_NE(s.describe(mini()).find("W_fwd all-gather"), std::string::npos);
}

// The issue order, by hand: three-level (W gcd, G node, O system) on frontier-mini, the tied order,
// prefetch 1, two micro-batches. Backward positions 0 and 1 reuse the forward's last buffers; the
// loss sum follows the last forward; each range's G -> O reduce-scatter follows its last gradient
// reduction (pipelined boundary); the norm, the non-finite vote, then the refreshes in range order,
// close the step.
TEST(StepSchedule, IssueOrderByHand) {
  using P = CollectivePurpose;
  PlanOptions o = PartitionPlan::preset("three-level", mini()).options();
  o.grad_accum_steps = 2;
  o.prefetch_depth = 1;
  const StepSchedule s(
      ShardLayout(small_ranges(), mini(), PartitionPlan::preset("three-level", mini()).with_options(o)),
      tied_order());
  struct Item {
    P purpose;
    int micro_batch, range;
  };
  std::vector<Item> want;
  for (int m = 0; m < 2; ++m) {
    for (int r : {0, 1, 2, 0}) want.push_back({P::weight_gather_fwd, m, r});
    if (m == 1) want.push_back({P::loss_sum, -1, -1});
    // Acquiring backward position 1 (range 2, reused) prefetches position 2 (range 1); range 2's
    // gradient is final after it. Position 2 prefetches position 3 (range 0); range 1 is final.
    want.push_back({P::weight_gather_bwd, m, 1});
    want.push_back({P::grad_reduce, m, 2});
    if (m == 1) want.push_back({P::grad_boundary_reduce, -1, 2});
    want.push_back({P::weight_gather_bwd, m, 0});
    want.push_back({P::grad_reduce, m, 1});
    if (m == 1) want.push_back({P::grad_boundary_reduce, -1, 1});
    want.push_back({P::grad_reduce, m, 0});
    if (m == 1) want.push_back({P::grad_boundary_reduce, -1, 0});
  }
  want.push_back({P::grad_norm, -1, -1});
  want.push_back({P::nonfinite_flag, -1, -1});
  for (int r : {0, 1, 2}) want.push_back({P::weight_refresh, -1, r});
  ASSERT_EQ(s.collectives().size(), want.size()) << s.describe(mini());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const ScheduledCollective& c = s.collectives()[i];
    EXPECT_EQ(c.purpose, want[i].purpose) << i << ": " << collective_purpose_name(c.purpose);
    EXPECT_EQ(c.micro_batch, want[i].micro_batch) << i;
    EXPECT_EQ(c.range, want[i].range) << i;
  }
}

// A tied range reported after the ranges acquired after its last use (the model reports the
// embedding last, after the encoder): its reduction moves to the end of the backward.
TEST(StepSchedule, GradsReadyOrderPlacesTheReductions) {
  const Topology t = mini();
  const ShardLayout l(small_ranges(), t, PartitionPlan::preset("zero3", t));
  const AcquisitionOrder order{{0, 1, 2, 0}, {0, 2, 1}, {2, 1, 0}};  // 0 acquired first, reported last
  std::vector<int> reduced;
  const StepSchedule ordered(l, order);  // named: a loop over a temporary's list would dangle
  for (const auto& c : ordered.collectives())
    if (c.purpose == CollectivePurpose::grad_reduce) reduced.push_back(c.range);
  EXPECT_EQ(reduced, (std::vector<int>{2, 1, 0}));
  const std::vector<int> defaulted = [&] {
    std::vector<int> out;
    const StepSchedule by_last(l, AcquisitionOrder{{0, 1, 2, 0}, {0, 2, 1}});
    for (const auto& c : by_last.collectives())
      if (c.purpose == CollectivePurpose::grad_reduce) out.push_back(c.range);
    return out;
  }();
  EXPECT_EQ(defaulted, (std::vector<int>{0, 2, 1})) << "without grads_ready: after each last acquisition";
  EXPECT_THROW(StepSchedule(l, AcquisitionOrder{{0, 1, 2}, {2, 1, 0}, {2, 1, 1}}), InputError);
  EXPECT_THROW(StepSchedule(l, AcquisitionOrder{{0, 1, 2}, {2, 1, 0}, {2, 1, 5}}), InputError);
}

// Closed forms on flat worlds (p ranks, one tier): payloads are padded ranges of P elements.
TEST(StepSchedule, PresetsOnFlatWorldsMatchClosedForms) {
  const std::vector<RangeSpec> ranges = {{"a", 10}, {"b", 7}};
  for (int p : plan_test::kFlatSizes) {
    SCOPED_TRACE("p=" + std::to_string(p));
    const Topology t = flat(p);
    const double P = double((10 + p - 1) / p * p + (7 + p - 1) / p * p);  // padded total
    const double share = double(p - 1) / p;
    const double scalars = 6 * 2 * share * 8;  // grad norm, loss: one f64 each; the vote four
    // ddp: one fp32 all-reduce of all gradients; the norm of a replicated O needs no collective.
    expect_bytes(bytes(PartitionPlan::preset("ddp", t), t, ranges, sequential_order(2)),
                 {{"world", 2 * share * 4 * P + 5 * 2 * share * 8}});
    // zero1: fp32 reduce-scatter of the full gradient, bf16 all-gather of the new weights.
    expect_bytes(bytes(PartitionPlan::preset("zero1", t), t, ranges, sequential_order(2)),
                 {{"world", share * 4 * P + share * 2 * P + scalars}});
    // zero2: bf16 reduce-scatter per range in backward, bf16 refresh.
    expect_bytes(bytes(PartitionPlan::preset("zero2", t), t, ranges, sequential_order(2)),
                 {{"world", share * 2 * P + share * 2 * P + scalars}});
    // zero3 with 2 micro-batches and sequential order (both backward gathers reused): per micro-batch a
    // forward gather and a reduce-scatter of every range.
    expect_bytes(bytes(PartitionPlan::preset("zero3", t).with_options({.grad_accum_steps = 2}), t, ranges,
                       sequential_order(2)),
                 {{"world", 2 * (share * 2 * P + share * 2 * P) + scalars}});
    // fp32 mode doubles the weight and gradient traffic of zero3.
    expect_bytes(bytes(PartitionPlan::preset("zero3", t).with_options({.dtype_mode = DTypeMode::fp32}), t,
                       ranges, sequential_order(2)),
                 {{"world", share * 4 * P + share * 4 * P + scalars}});
    // Every preset builds a schedule whose per-collective bytes sum to the per-tier total.
    for (const auto& name : PartitionPlan::preset_names()) {
      const StepSchedule s(ShardLayout(ranges, t, PartitionPlan::preset(name, t)), sequential_order(2));
      EXPECT_NEAR(s.total_bytes(), s.bytes_per_tier().at("world"), 1e-9);
      if (p == 1) {
        EXPECT_TRUE(s.collectives().empty()) << name;
      }
    }
  }
}

PartitionPlan flat_collectives(PartitionPlan p) {
  PlanOptions o = p.options();
  o.collectives = CollectiveAlgo::flat;
  return p.with_options(o);
}

// zero3 with flat collectives: every gather and reduction is ONE step over the 8-rank world, booked
// under "world"; (p-1)/p of the payload is what the three hierarchical steps moved in total
// (72+48+56 elements of bf16: 1.75 x 176 = 308 bytes). The scalars stay tier by tier.
TEST(StepScheduleFlat, Zero3IsOneWorldStepPerCollective) {
  const Topology t = mini();
  const StepSchedule s(ShardLayout(small_ranges(), t, flat_collectives(PartitionPlan::preset("zero3", t))),
                       tied_order());
  expect_bytes(s.bytes_per_tier(), {{"gcd", 48}, {"node", 48}, {"system", 48}, {"world", 308}});
  EXPECT_EQ(s.labels(), (std::vector<std::string>{"gcd", "node", "system", "world"}));
  const ScheduledCollective& first = s.collectives().front();
  ASSERT_EQ(first.steps.size(), 1u);
  EXPECT_EQ(first.steps[0].kind, CollectiveKind::all_gather);
  EXPECT_EQ(first.steps[0].label, "world");
  EXPECT_EQ(first.steps[0].tiers, TierSet{0b111});
  EXPECT_EQ(first.steps[0].tier, 2);  // priced on the outermost tier's link
  EXPECT_EQ(first.steps[0].group_size, 8);
  EXPECT_EQ(first.steps[0].payload_bytes, 32u);
  EXPECT_EQ(s.collectives().back().steps.size(), 3u);  // the non-finite vote: gcd, node, system
  EXPECT_NE(s.describe(t).find("(flat)"), std::string::npos) << s.describe(t);
}

// Per rank a flat ring moves what the hierarchical composition moves in all (the per-tier steps
// telescope to (p-1)/p of the payload, 2(p-1)/p for an all-reduce): for every preset, also with
// qwZ/qgZ, the totals agree and only the labels differ. Single-tier sets are the same in both.
TEST(StepScheduleFlat, SameTotalBytesAsHierarchicalOnlyLabelsDiffer) {
  for (const Topology& t : {mini(), test_topology_2x1x3()}) {
    for (const auto& name : PartitionPlan::preset_names()) {
      const PartitionPlan hier = PartitionPlan::preset(name, t);
      const StepSchedule h(ShardLayout(small_ranges(), t, hier), tied_order());
      const ShardLayout fl(small_ranges(), t, flat_collectives(hier));
      const StepSchedule f(fl, tied_order());
      EXPECT_NEAR(f.total_bytes(), h.total_bytes(), 1e-9 * h.total_bytes()) << name << " on " << t.name();
      ASSERT_EQ(f.collectives().size(), h.collectives().size()) << name;
      for (std::size_t i = 0; i < f.collectives().size(); ++i) {
        const auto& fc = f.collectives()[i];
        const auto& hc = h.collectives()[i];
        SCOPED_TRACE(name + " on " + t.name() + ", " + std::string(collective_purpose_name(fc.purpose)));
        EXPECT_EQ(fc.purpose, hc.purpose);
        const bool qgz = hc.purpose == CollectivePurpose::grad_reduce && hier.options().qgz;
        if (fl.runs_flat(fc.tiers) && fc.phase != StepPhase::scalar && !qgz) {
          ASSERT_EQ(fc.steps.size(), 1u);
          EXPECT_EQ(fc.steps[0].label, t.tier_set_name(fc.tiers));
          EXPECT_GT(hc.steps.size(), 1u);
        } else {
          ASSERT_EQ(fc.steps.size(), hc.steps.size());
          for (std::size_t k = 0; k < fc.steps.size(); ++k) EXPECT_EQ(fc.steps[k].label, hc.steps[k].label);
        }
      }
    }
  }
}

// Which collectives go flat: three-level on mini reduces gradients over gcd+node and refreshes W over
// node+system as single steps; W (gcd) and the boundary (system) are single-tier anyway. zeropp's qgZ
// stays a tier-by-tier all-to-all; its hpZ backward gather over gcd+node is one flat step.
TEST(StepScheduleFlat, MultiTierSetsGoFlatQgzStaysHierarchical) {
  const Topology t = mini();
  auto first = [](const StepSchedule& s, CollectivePurpose p) {
    for (const auto& c : s.collectives())
      if (c.purpose == p) return c;
    ADD_FAILURE() << collective_purpose_name(p) << " not scheduled";
    return ScheduledCollective{};
  };
  const StepSchedule tl(
      ShardLayout(small_ranges(), t, flat_collectives(PartitionPlan::preset("three-level", t))),
      tied_order());
  EXPECT_EQ(first(tl, CollectivePurpose::grad_reduce).steps.at(0).label, "gcd+node");
  EXPECT_EQ(first(tl, CollectivePurpose::weight_refresh).steps.at(0).label, "node+system");
  EXPECT_EQ(first(tl, CollectivePurpose::weight_gather_fwd).steps.at(0).label, "gcd");
  EXPECT_EQ(first(tl, CollectivePurpose::grad_boundary_reduce).steps.at(0).label, "system");
  const StepSchedule zpp(
      ShardLayout({{"big", 1 << 14}}, t, flat_collectives(PartitionPlan::preset("zeropp", t))),
      sequential_order(1));
  const ScheduledCollective g = first(zpp, CollectivePurpose::grad_reduce);
  EXPECT_EQ(g.kind, CollectiveKind::all_to_all);
  ASSERT_EQ(g.steps.size(), 3u);
  EXPECT_EQ(g.steps[0].label, "gcd");
  EXPECT_EQ(first(zpp, CollectivePurpose::weight_gather_fwd).steps.at(0).label, "world");
  EXPECT_EQ(first(zpp, CollectivePurpose::weight_gather_fwd).quant_bits, 8);
}

// hsdp on node: gathers and reductions stay inside the node (gcd+node); the only system traffic is the
// fp32 all-reduce of the O-shard gradient across the two node replicas, and the world scalars.
TEST(StepSchedule, HsdpKeepsWeightTrafficInsideThePartitionGroup) {
  const auto b = bytes(PartitionPlan::preset("hsdp", mini()));
  // O shard = P/4 elements fp32 = P bytes; all-reduce over system (p=2): P bytes. P total 56.
  // The grad norm is all-reduced over gcd+node only.
  EXPECT_NEAR(b.at("system"), 56 + 8 + 32, 1e-9);  // the loss and the vote
  // gcd: gathers over gcd+node move P on gcd: (72 + 48), reductions 56, scalars 8 + 8 + 32.
  EXPECT_NEAR(b.at("gcd"), 72 + 48 + 56 + 48, 1e-9);
}

}  // namespace
}  // namespace tz
