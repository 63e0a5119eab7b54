// The cost model's terms by hand: collective pricing (measured curves, one-tier and NCCL closed
// forms), quantization kernel time, message granularity (tierzero ranges, DeepSpeed modules and
// reduce buckets), the explain breakdown adding up to the step, and the step boundary's order of
// operations in both modes.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "perf/auto_planner.hpp"
#include "perf/collective_price.hpp"
#include "perf/collective_time.hpp"
#include "perf/cost_report.hpp"
#include "perf/kernel_time.hpp"
#include "perf/model_ranges.hpp"
#include "perf/step_cost.hpp"
#include "plan/step_schedule.hpp"
#include "support/expect_input_error.hpp"

namespace tz::perf {
namespace {

TierStep flat_step(const Topology& topo, CollectiveKind kind, std::size_t payload) {
  TierStep s;
  s.kind = kind;
  s.tiers = tiers_up_to(topo.num_tiers() - 1);
  s.tier = topo.num_tiers() - 1;
  s.group_size = topo.world_size();
  s.label = "world";
  s.payload_bytes = payload;
  return s;
}

TEST(CollectivePrice, MeasuredCurveAtATablePointAndTheClosedFormsOtherwise) {
  const Topology frontier = Topology::load("frontier").resolve_outer(32);  // 256 GCDs: a measured row
  const CollectiveCurve* ag = frontier.find_curve(0b111, "all_gather", "rccl");
  ASSERT_NE(ag, nullptr);
  const double s = ag->sizes_bytes[7];  // 256 MiB
  const double busbw = ag->rows[4].busbw_GBps[7];
  ASSERT_EQ(ag->rows[4].group_size, 256);
  const MessagePrice m = price_message(flat_step(frontier, CollectiveKind::all_gather, std::size_t(s)), s,
                                       frontier, Runtime::deepspeed);
  EXPECT_TRUE(m.measured);
  EXPECT_NEAR(m.seconds, 255.0 / 256 * s / (busbw * 1e9), 1e-12);
  EXPECT_NEAR(m.latency_s + m.bandwidth_s, m.seconds, 1e-15);
  EXPECT_GT(m.latency_s, 0);  // 256 MiB over 256 GCDs is far from the curve's bandwidth
  // An all-reduce without its own curve: reduce-scatter then all-gather from their curves.
  const CollectiveCurve* rs = frontier.find_curve(0b111, "reduce_scatter", "rccl");
  const MessagePrice ar = price_message(flat_step(frontier, CollectiveKind::all_reduce, std::size_t(s)), s,
                                        frontier, Runtime::deepspeed);
  EXPECT_NEAR(ar.seconds,
              255.0 / 256 * s / (busbw * 1e9) + 255.0 / 256 * s / (rs->rows[4].busbw_GBps[7] * 1e9), 1e-12);
  // tierzero's engine does not run RCCL: its shard-ordered ring is the outer tier's closed form.
  const MessagePrice tz = price_message(flat_step(frontier, CollectiveKind::all_gather, std::size_t(s)), s,
                                        frontier, Runtime::tierzero);
  EXPECT_FALSE(tz.measured);
  EXPECT_NEAR(tz.seconds, collective_time_s(CollectiveKind::all_gather, s, 256, link_of(frontier.tier(2))),
              1e-12);
  EXPECT_NEAR(tz.latency_s, 255 * 5e-6, 1e-12);
  // DeepSpeed on a topology without curves: NCCL's channels, bound by the busiest unit's links.
  const Topology mini = Topology::load("frontier-mini");  // gcd 2 x 200, node 2 x 50, system 2 x 12.5
  const double n = 8e6;
  const MessagePrice nc = price_message(flat_step(mini, CollectiveKind::reduce_scatter, std::size_t(n)), n,
                                        mini, Runtime::deepspeed);
  // min(1 x 200, 2 x 50, 4 x 12.5) = 50 GB/s, the nodes' NICs; 7 steps of 5 us + 1 MB.
  EXPECT_NEAR(nc.seconds, 7 * (5e-6 + n / 8 / 50e9), 1e-12);
  EXPECT_EQ(nc.bound_tier, 2);
  EXPECT_NEAR(nc.latency_s, 7 * 5e-6, 1e-15);
}

TEST(CollectivePrice, ASharedMemoryStepIsPricedAsCopiesThroughMemory) {
  // frontier-mini: 1600 GB/s of device memory. A gcd-pair all-gather through shared memory: each of
  // the 2 ranks writes its block in and reads the other's out (2 payloads of traffic), one latency.
  const Topology mini = Topology::load("frontier-mini").resolve(8);
  TierStep s;
  s.kind = CollectiveKind::all_gather;
  s.tier = 0;
  s.tiers = tier_bit(0);
  s.group_size = 2;
  s.label = "gcd";
  s.algorithm = StepAlgorithm::shared_memory;
  const double n = 4e6;
  const MessagePrice m = price_message(s, n, mini, Runtime::tierzero);
  EXPECT_FALSE(m.measured);
  EXPECT_NEAR(m.bandwidth_s, 2 * 2 * n / 1600e9, 1e-15);
  EXPECT_NEAR(m.latency_s, mini.tier(0).latency_us * 1e-6, 1e-15);
  EXPECT_NEAR(m.seconds, m.latency_s + m.bandwidth_s, 1e-15);
  // The reduce-scatter adds its read for the sum (3 payloads) and the reduction; the ring of the same
  // step is priced on the link as before.
  s.kind = CollectiveKind::reduce_scatter;
  EXPECT_NEAR(price_message(s, n, mini, Runtime::tierzero).bandwidth_s, 2 * 3 * n / 1600e9, 1e-15);
  s.algorithm = StepAlgorithm::ring;
  EXPECT_NEAR(price_message(s, n, mini, Runtime::tierzero).seconds,
              collective_time_s(CollectiveKind::reduce_scatter, n, 2, link_of(mini.tier(0))), 1e-12);
  // A topology without the memory's bandwidth (flat) prices it as its link's ring, an upper bound.
  const Topology flat = Topology::load("flat").resolve(4);
  TierStep f = flat_step(flat, CollectiveKind::all_gather, 1000);
  const double ring_s = price_message(f, 1e6, flat, Runtime::tierzero).seconds;
  f.algorithm = StepAlgorithm::shared_memory;
  EXPECT_EQ(price_message(f, 1e6, flat, Runtime::tierzero).seconds, ring_s);
}

TEST(KernelTime, QuantizeAndDequantizeBytesByHand) {
  // 1000 bf16 values to INT8 in blocks of 256: 4 blocks of 256 codes + 4 fp32 scales = 1040 bytes.
  EXPECT_DOUBLE_EQ(quantize_bytes_moved(1000, 2, 8, 256), 2000 + 1040);
  EXPECT_DOUBLE_EQ(dequantize_bytes_moved(1000, 2, 8, 256), 1040 + 2000);
  // qgZ over a tier of 4: reads the 4 slices' INT4 codes (4 blocks x (128 + 4)), writes 250 fp32 sums.
  EXPECT_DOUBLE_EQ(dequantize_reduce_bytes_moved(1000, 4, 4, 256), 4 * 132 + 250 * 4);
  EXPECT_DOUBLE_EQ(quantize_bytes_moved(std::size_t(777), 4, 4, 32),
                   777 * 4 + double(quantized_bytes(777, 4, 32)));  // one formula with the plan's
  DeviceSpec dev;
  dev.memory_bandwidth_GBps = 1600;
  EXPECT_DOUBLE_EQ(quant_kernel_bytes_per_s(dev, 0.5), 800e9);
  dev.quant_GBps = 100;
  EXPECT_DOUBLE_EQ(quant_kernel_bytes_per_s(dev, 0.5), 100e9);
}

// zeropp on frontier-mini: the qwZ gathers' kernel time, summed over the step, is the shard's
// quantization plus the range's dequantization at 0.8 x 1600 GB/s, collective by collective. The
// model's matrices are above DeepSpeed's persistence threshold, so DeepSpeed gathers them too.
TEST(KernelTime, QwzKernelsOfAStepByHandInBothRuntimes) {
  const ModelShape m = model_shape_from_json(
      nlohmann::json::parse(
          R"({"n_layer": 2, "n_embd": 512, "n_head": 8, "n_positions": 64, "vocab_size": 1024})"),
      "m");
  const Topology topo = Topology::load("frontier-mini");
  const PartitionPlan plan = preset_with_options("zeropp", topo, {});
  const PlannedStep planned = plan_step(m, topo, plan);
  double bytes = 0;
  for (const auto& c : planned.schedule.collectives())
    if (c.quant_bits == 8)
      bytes += quantize_bytes_moved(double(c.count), 2, 8, 256) +
               dequantize_bytes_moved(double(planned.layout.padded_numel(c.range)), 2, 8, 256);
  ASSERT_GT(bytes, 0);
  const double expected = bytes / (1600e9 * 0.8);
  const StepCost tz = predict_step(m, topo, plan, {.runtime = Runtime::tierzero});
  double in_rows = 0;
  for (const auto& r : tz.comms)
    if (r.purpose == "W_fwd all-gather" || r.purpose == "W_bwd all-gather") in_rows += r.kernel_s;
  EXPECT_NEAR(in_rows, expected, 1e-9 * expected);
  EXPECT_EQ(tz.kernel_s, 0);  // tierzero: inside the collective
  // DeepSpeed dequantizes on the compute stream: the same bytes, per module message.
  const StepCost ds = predict_step(m, topo, plan, {.runtime = Runtime::deepspeed});
  EXPECT_GT(ds.kernel_s, 0);
  EXPECT_LE(ds.kernel_s, expected * 1.5);  // module messages pad their own last blocks
  // Halving the kernel efficiency doubles the kernel time.
  const StepCost slow = predict_step(m, topo, plan, {.runtime = Runtime::tierzero, .kernel_efficiency = 0.4});
  double slow_rows = 0;
  for (const auto& r : slow.comms)
    if (r.purpose == "W_fwd all-gather" || r.purpose == "W_bwd all-gather") slow_rows += r.kernel_s;
  EXPECT_NEAR(slow_rows, 2 * expected, 1e-9 * expected);
}

int messages_of(const StepCost& c, const std::string& purpose, const std::string& label) {
  int n = 0;
  for (const auto& r : c.comms)
    if (r.purpose == purpose && r.label == label) n += r.messages;
  return n;
}

// DeepSpeed gathers module by module, never its persistent parameters (< 1e5 elements), and reduces
// gradients in buckets of 5e8 elements; tierzero issues one collective per range.
TEST(Granularity, MessagesByHandForTierzeroRangesAndDeepSpeedModulesAndBuckets) {
  const ModelShape m = load_model_shape("gpt-20b");  // GPT-NeoX-20B: h = 6144, 44 layers, untied head
  const Topology topo = Topology::load("frontier").resolve_outer(2);
  PlanOptions flat;
  flat.collectives = CollectiveAlgo::flat;
  const PartitionPlan zero3 = preset_with_options("zero3", topo, flat);
  const StepCost tz = predict_step(m, topo, zero3, {.runtime = Runtime::tierzero});
  // Forward: embeddings, 44 blocks, ln_f, lm_head = 47 gathers, one each; a reduction per range.
  EXPECT_EQ(messages_of(tz, "W_fwd all-gather", "world"), 47);
  EXPECT_EQ(messages_of(tz, "G reduction", "world"), 47);
  const StepCost ds = predict_step(m, topo, zero3, {.runtime = Runtime::deepspeed});
  // Per block: qkv, proj, fc and mlp.proj weights (LayerNorms and biases are persistent): 4; the
  // embeddings: wte (rotary positions: no wpe); ln_f: none; lm_head: 1. 1 + 44 x 4 + 1 = 178.
  EXPECT_EQ(messages_of(ds, "W_fwd all-gather", "world"), 178);
  // A block holds 12h^2 + 13h = 453.1M elements, so a 5e8 bucket holds one block: lm_head (309.8M)
  // and ln_f first in one, 44 buckets of a block, then the embeddings (309.8M) in one.
  EXPECT_EQ(messages_of(ds, "G reduction", "world"), 46);
  // tierzero with a bucket of two blocks: lm_head + ln_f + the last block, 21 buckets of two blocks,
  // then the first block + embeddings.
  const double block = 12.0 * 6144 * 6144 + 13 * 6144;
  const StepCost tb =
      predict_step(m, topo, zero3, {.runtime = Runtime::tierzero, .bucket_elements = 2 * block + 64});
  EXPECT_EQ(messages_of(tb, "G reduction", "world"), 23);
  // A bucket smaller than a range splits it: 1e8-element messages, 5 per block.
  const StepCost ts = predict_step(m, topo, zero3, {.runtime = Runtime::tierzero, .bucket_elements = 1e8});
  EXPECT_EQ(messages_of(ts, "G reduction", "world"),
            4 + 1 + 44 * 5 + 4);  // 4 for lm_head, ln_f alone, 5 per block, 4 for the embeddings
  // Small messages pay their latency: more messages of the same bytes take longer.
  double big = 0, small = 0;
  for (const auto& r : tz.comms)
    if (r.purpose == "G reduction") big += r.busy_s;
  for (const auto& r : ts.comms)
    if (r.purpose == "G reduction") small += r.busy_s;
  EXPECT_GT(small, big);
  test::expect_input_error([&] { predict_step(m, topo, zero3, {.bucket_elements = -1}); }, {"bucket"});
}

TEST(Explain, RowsAddUpToTheStepForEveryPresetRuntimeAndBoundary) {
  const ModelShape m = load_model_shape("gpt-small");
  for (const char* topo_name : {"frontier-mini", "frontier"}) {
    const Topology any = Topology::load(topo_name);
    const Topology topo = any.resolved() ? any : any.resolve_outer(4);
    for (const auto& name : PartitionPlan::preset_names())
      for (CollectiveAlgo algo : {CollectiveAlgo::hierarchical, CollectiveAlgo::flat})
        for (Runtime rt : {Runtime::tierzero, Runtime::deepspeed})
          for (BoundaryMode bm : {BoundaryMode::exposed, BoundaryMode::pipelined}) {
            PlanOptions base;
            base.collectives = algo;
            base.grad_accum_steps = 2;
            const PartitionPlan plan = preset_with_options(name, topo, base);
            const StepCost c = predict_step(m, topo, plan, {.runtime = rt, .boundary = bm});
            double exposed = 0, bytes = 0;
            for (const auto& r : c.comms) exposed += r.exposed_s, bytes += r.bytes;
            const std::string what = std::string(topo_name) + " " + name + " " +
                                     std::string(runtime_name(rt)) + " " +
                                     std::string(boundary_mode_name(bm));
            EXPECT_NEAR(c.compute_s + c.kernel_s + c.optimizer_s + exposed, c.step_s, 1e-9 * c.step_s)
                << what;
            double tier_bytes = 0;
            for (const auto& t : c.tiers) tier_bytes += t.bytes;
            EXPECT_NEAR(bytes, tier_bytes, 1e-6 * tier_bytes + 1e-9) << what;
            EXPECT_FALSE(c.bound.empty()) << what;
            const std::string text = format_explain(topo, plan, c);
            EXPECT_NE(text.find("check: compute + kernels + optimizer + exposed"), std::string::npos);
            // The critical path of the step graph tiles the steady step: its times add up to it.
            double path = 0;
            for (const auto& s : c.critical_path) path += s.seconds;
            EXPECT_NEAR(path, c.step_s, 1e-9 * c.step_s) << what;
            ASSERT_FALSE(c.critical_path.empty()) << what;
            EXPECT_NEAR(c.critical_path.front().start_s, 0.0, 1e-12) << what;
            EXPECT_NE(text.find(fmt::format("{:.4f} s (step {:.4f} s)", path, c.step_s)), std::string::npos)
                << text;
          }
  }
}

// The step boundary's order of operations. Pipelined (the default, as the engine issues it): the
// loss as the last forward ends, reductions per range as gradients become final (backward order),
// the grad norm, the non-finite vote, then each range's refresh after its AdamW in forward order;
// the schedule lists the same order. Exposed: every range's G -> O reduce-scatter, every replica
// all-reduce, grad norm, non-finite flag, every refresh, loss.
TEST(Boundary, OrderOfOperationsInBothModes) {
  const ModelShape m = load_model_shape("gpt-tiny");
  const Topology topo = Topology::load("frontier-mini");
  const PartitionPlan plan = preset_with_options("three-level", topo, {});  // RS over system, refresh
  const PlannedStep planned = plan_step(m, topo, plan);
  std::vector<std::pair<std::string, int>> schedule_order;
  for (const auto& c : planned.schedule.collectives())
    if (c.phase == StepPhase::boundary || c.phase == StepPhase::scalar)
      schedule_order.push_back({std::string(collective_purpose_name(c.purpose)), c.range});
  EXPECT_EQ(CostOptions{}.boundary, BoundaryMode::pipelined) << "the planner prices what the engine runs";

  const ModelRanges mr = model_ranges(m.config);
  std::vector<int> grads;  // gradient final order: backward order of last acquisitions
  for (int i = static_cast<int>(mr.backward.size()) - 1; i >= 0; --i)
    if (std::find(grads.begin(), grads.end(), mr.backward[i]) == grads.end()) grads.push_back(mr.backward[i]);
  std::reverse(grads.begin(), grads.end());
  std::vector<int> fwd;
  for (int r : mr.forward)
    if (std::find(fwd.begin(), fwd.end(), r) == fwd.end()) fwd.push_back(r);

  const StepCost exposed = predict_step(m, topo, plan, {.boundary = BoundaryMode::exposed});
  std::vector<std::pair<std::string, int>> exposed_order;
  for (int r : grads) exposed_order.push_back({"G->O reduce-scatter", r});
  exposed_order.push_back({"grad-norm all-reduce", -1});
  exposed_order.push_back({"non-finite flag all-reduce", -1});
  for (int r : fwd) exposed_order.push_back({"W refresh all-gather", r});
  exposed_order.push_back({"loss all-reduce", -1});
  EXPECT_EQ(exposed.boundary_order, exposed_order);
  // Exposed: every boundary collective is exposed for its whole busy time.
  for (const auto& r : exposed.comms) {
    if (r.purpose == "G->O reduce-scatter" || r.purpose == "W refresh all-gather") {
      EXPECT_NEAR(r.exposed_s, r.busy_s, 1e-12) << r.purpose << " " << r.label;
    }
  }

  const StepCost piped = predict_step(m, topo, plan, {.boundary = BoundaryMode::pipelined});
  std::vector<std::pair<std::string, int>> expected;
  expected.push_back({"loss all-reduce", -1});
  for (int r : grads) expected.push_back({"G->O reduce-scatter", r});
  expected.push_back({"grad-norm all-reduce", -1});
  expected.push_back({"non-finite flag all-reduce", -1});
  for (int r : fwd) expected.push_back({"W refresh all-gather", r});
  EXPECT_EQ(piped.boundary_order, expected);
  EXPECT_EQ(piped.boundary_order, schedule_order) << "the model issues the boundary as the engine does";
  // Pipelining hides part of the boundary: never slower.
  EXPECT_LE(piped.step_s, exposed.step_s * (1 + 1e-12));
  EXPECT_LT(piped.exposed_comm_s, exposed.exposed_comm_s);
}

}  // namespace
}  // namespace tz::perf

namespace tz::perf {
namespace {

// Ranks outnumbering a host's cores wait for the scheduler at every collective call: (k/C - 1) base
// slices, Linux's EEVDF base slice 750 us x (1 + floor(log2(C))).
TEST(SchedulerWait, SlicesPerCallByHandAndAddedToEveryMessage) {
  EXPECT_EQ(scheduler_wait_s({}), 0);
  EXPECT_EQ(scheduler_wait_s({.host_cores = 2, .local_ranks = 2}), 0);
  EXPECT_NEAR(scheduler_wait_s({.host_cores = 2, .local_ranks = 4}), 1 * 1500e-6, 1e-15);
  EXPECT_NEAR(scheduler_wait_s({.host_cores = 2, .local_ranks = 8}), 3 * 1500e-6, 1e-15);
  EXPECT_NEAR(scheduler_wait_s({.host_cores = 16, .local_ranks = 32}), 1 * 750e-6 * 4,
              1e-15);  // log2 of min(C, 8)
  EXPECT_NEAR(scheduler_wait_s({.host_cores = 2, .local_ranks = 8, .sched_slice_us = 100}), 300e-6, 1e-15);
  const ModelShape m = load_model_shape("gpt-tiny");
  const Topology flat = Topology::from_json(nlohmann::json::parse(R"({"name": "f", "tiers": [
      {"name": "world", "fanout": "auto", "bandwidth_GBps": 5, "latency_us": 10}],
      "device": {"peak_tflops": 0.05}})"),
                                            "f")
                            .resolve(8);
  const PartitionPlan plan = preset_with_options("zero3", flat, {});
  const StepCost base = predict_step(m, flat, plan);
  const StepCost shared = predict_step(m, flat, plan, {.host_cores = 2, .local_ranks = 8});
  int messages = 0;
  double busy = 0, busy0 = 0;
  for (const auto& r : shared.comms) messages += r.messages, busy += r.busy_s;
  for (const auto& r : base.comms) busy0 += r.busy_s;
  EXPECT_NEAR(busy - busy0, messages * 4.5e-3, 1e-9);
  EXPECT_GT(shared.step_s, base.step_s);
  test::expect_input_error([&] { predict_step(m, flat, plan, {.host_cores = 2}); },
                           {"host cores", "local ranks"});
}

}  // namespace
}  // namespace tz::perf

namespace tz::perf {
namespace {

// Ranks that share a host's cores pay for their collectives' CPU out of compute: every message's
// cpu_call_us + sent / cpu_GBps on its outermost tier (an all-reduce two calls) and the quantization
// kernels run inside the collectives, times local ranks / host cores; nothing when the host is not
// shared or the tiers give no CPU figures.
TEST(CollectiveCpu, ChargedToComputeWhereTheRanksShareTheHostsCores) {
  const ModelShape m = load_model_shape("gpt-tiny");
  nlohmann::json doc = Topology::load("frontier-mini").to_json();
  const double call_us[] = {30, 45, 80}, cpu_GBps[] = {8, 5, 2};
  nlohmann::json with_cpu = doc;
  for (int t = 0; t < 3; ++t) {
    with_cpu["tiers"][t]["cpu_call_us"] = call_us[t];
    with_cpu["tiers"][t]["cpu_GBps"] = cpu_GBps[t];
  }
  with_cpu["device"]["quant_GBps"] = 20;
  doc["device"]["quant_GBps"] = 20;
  const Topology topo = Topology::from_json(with_cpu, "cpu"), plain = Topology::from_json(doc, "plain");
  const CostOptions shared{.host_cores = 2, .local_ranks = 8};
  for (const char* name : {"zero3", "zeropp", "ddp"}) {
    const PartitionPlan plan = preset_with_options(name, topo, {});
    double by_hand = 0;
    const PlannedStep planned = plan_step(m, topo, plan);
    for (const auto& c : planned.schedule.collectives())
      for (const TierStep& st : c.steps) {
        int outer = 0;
        for (int t = 0; t < 3; ++t)
          if (st.tiers & tier_bit(t)) outer = t;
        const int calls = st.kind == CollectiveKind::all_reduce ? 2 : 1;
        const double sent = calls * double(st.group_size - 1) / st.group_size * double(st.payload_bytes);
        by_hand += calls * call_us[outer] * 1e-6 + sent / (cpu_GBps[outer] * 1e9);
      }
    const StepCost c = predict_step(m, topo, plan, shared);
    for (const auto& r : c.comms) by_hand += r.kernel_s;  // tierzero: the kernels run in the collective
    EXPECT_NEAR(c.collective_cpu_s, by_hand * 8 / 2, 1e-9 * by_hand) << name;
    // Charged to compute: the same step without the tiers' CPU figures (the kernels alone) computes
    // that much less.
    const StepCost without = predict_step(m, plain, plan, shared);
    double kernels = 0;
    for (const auto& r : without.comms) kernels += r.kernel_s;
    EXPECT_NEAR(without.collective_cpu_s, kernels * 8 / 2, 1e-12) << name;
    EXPECT_EQ(kernels > 0, std::string(name) == "zeropp") << name;
    EXPECT_NEAR(c.compute_s - without.compute_s, c.collective_cpu_s - without.collective_cpu_s,
                1e-9 * c.compute_s)
        << name;
    EXPECT_GT(c.step_s, without.step_s) << name;
    EXPECT_NEAR(c.compute_s + c.kernel_s + c.optimizer_s + c.exposed_comm_s, c.step_s, 1e-9 * c.step_s);
    EXPECT_NE(format_explain(topo, plan, c).find("collectives' CPU on the shared cores"), std::string::npos);
    // A host the ranks do not share: the figures change nothing.
    const StepCost alone = predict_step(m, topo, plan), alone_plain = predict_step(m, plain, plan);
    EXPECT_EQ(alone.collective_cpu_s, 0) << name;
    EXPECT_DOUBLE_EQ(alone.step_s, alone_plain.step_s) << name;
  }
}

}  // namespace
}  // namespace tz::perf
