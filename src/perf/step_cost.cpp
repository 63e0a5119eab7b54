// The step cost model (step_cost.hpp): the schedule's collectives as the runtime issues them, priced
// message by message, placed on the two-stream timeline with the step boundary of BoundaryMode.
#include "perf/step_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "perf/activation_memory.hpp"
#include "perf/collective_price.hpp"
#include "perf/critical_path.hpp"
#include "perf/kernel_time.hpp"
#include "perf/model_ranges.hpp"
#include "perf/step_flops.hpp"
#include "perf/step_timeline.hpp"

namespace tz::perf {

BoundaryMode parse_boundary_mode(std::string_view text, std::string_view option) {
  if (text == "exposed") return BoundaryMode::exposed;
  if (text == "pipelined") return BoundaryMode::pipelined;
  fail_input("{}: must be exposed or pipelined, got '{}'", option, text);
}

double scheduler_wait_s(const CostOptions& o) {
  if (o.host_cores < 1 || o.local_ranks <= o.host_cores) return 0;
  double slice_us = o.sched_slice_us;
  if (!(slice_us > 0)) slice_us = 750.0 * (1 + std::floor(std::log2(std::min(o.host_cores, 8))));
  return (double(o.local_ranks) / o.host_cores - 1) * slice_us * 1e-6;
}

namespace {

constexpr int kSteps = 3;  // simulated steps; the second period is the steady one

struct LabelPart {
  std::string label;
  int messages = 0;
  double busy_s = 0, latency_s = 0, bandwidth_s = 0, reduce_s = 0, bytes = 0;
  bool measured = false;
  int bound_tier = 0;
};

// One comm task of a step: a scheduled collective, or a bucket of gradient reductions, as the
// runtime issues it.
struct Item {
  const ScheduledCollective* c = nullptr;  // the representative collective (kind, tiers, steps)
  std::vector<int> collectives;            // indices into the schedule (the last one is `c`)
  double seconds = 0;                      // on the comm stream, kernels inside included
  double kernel_s = 0;                     // of which kernels (comm stream) ...
  double compute_kernel_s = 0;  // ... or on the compute stream before its acquisition (DeepSpeed qwZ)
  double cpu_s = 0;             // host CPU of one rank for its messages (MessagePrice::cpu_s)
  std::vector<LabelPart> parts = {};
};

LabelPart& part(Item& item, const std::string& label) {
  for (auto& p : item.parts)
    if (p.label == label) return p;
  item.parts.push_back(LabelPart{.label = label});
  return item.parts.back();
}

struct Pricer {
  const Topology& topo;
  const ShardLayout& layout;
  const CostOptions& options;
  double kernel_rate = 0;  // bytes/s, 0 = unknown
  double sched_wait = 0;   // per collective call, ranks sharing a host's cores
  bool kernels_needed = false;

  // Comm time of `scales` messages of collective c (each scale multiplies every step's payload).
  void price(Item& item, const ScheduledCollective& c, const std::vector<double>& scales) const {
    for (double s : scales)
      for (const TierStep& st : c.steps) {
        MessagePrice m = price_message(st, double(st.payload_bytes) * s, topo, options.runtime);
        m.seconds += m.bandwidth_s * (1 / options.link_efficiency - 1);
        m.bandwidth_s /= options.link_efficiency;
        const double per_call =
            options.message_overhead_us * 1e-6 + sched_wait;  // per call of the step's collective
        m.seconds += per_call;
        m.latency_s += per_call;
        LabelPart& p = part(item, st.label);
        p.messages += 1;
        p.busy_s += m.seconds;
        p.latency_s += m.latency_s;
        p.bandwidth_s += m.bandwidth_s;
        p.reduce_s += m.reduce_s;
        p.measured = p.measured || m.measured;
        p.bound_tier = m.bound_tier;
        item.seconds += m.seconds;
        item.cpu_s += m.cpu_s;
      }
  }

  double kernel_seconds(double bytes) const { return kernel_rate > 0 ? bytes / kernel_rate : 0.0; }

  // qwZ: quantize the shard at its source, dequantize the gathered range, message by message.
  double qwz_kernel_s(const ScheduledCollective& c, const std::vector<double>& scales) const {
    const double w = dtype_bytes(c.dtype);
    const std::size_t block = static_cast<std::size_t>(layout.plan().options().quant_block);
    double bytes = 0;
    for (double s : scales)
      bytes += quantize_bytes_moved(double(c.count) * s, w, 8, block) +
               dequantize_bytes_moved(double(layout.padded_numel(c.range)) * s, w, 8, block);
    return kernel_seconds(bytes);
  }

  // qgZ: on each tier quantize the input, exchange, dequantize-reduce; `elements` = the first tier's input.
  double qgz_kernel_s(const ScheduledCollective& c, double elements) const {
    const double value_bytes =
        options.runtime == Runtime::deepspeed ? 2.0 : 4.0;  // bf16 gradient : fp32 sums
    const std::size_t block = static_cast<std::size_t>(layout.plan().options().quant_block);
    double bytes = 0, n = elements;
    for (const TierStep& st : c.steps) {
      bytes += quantize_bytes_moved(n, value_bytes, 4, block) +
               dequantize_reduce_bytes_moved(n, st.group_size, 4, block);
      n /= st.group_size;
    }
    return kernel_seconds(bytes);
  }
};

// Message shares of a weight gather of `range`: the whole range (tierzero), or one per module without
// its persistent parameters (DeepSpeed; none when all of the range's parameters are persistent).
std::vector<double> gather_scales(const ModelRanges& mr, int range, Runtime runtime) {
  if (runtime == Runtime::tierzero) return {1.0};
  std::vector<double> numel;
  double total = 0;
  for (const auto& m : mr.modules.at(range)) {
    double n = 0;
    for (std::size_t t : m.tensor_numel)
      if (double(t) >= kDeepSpeedPersistenceThreshold) n += double(t);
    if (n > 0) numel.push_back(n), total += n;
  }
  for (double& n : numel) n /= total;
  return numel;
}

// Every node's own time: an acquisition its compute (with DeepSpeed's dequantization before it),
// AdamW its range's share of the update (all of it for the exposed boundary's one optimizer node);
// joins, the optimizer's check on a steady step (see below) and collectives 0 (collectives are
// priced as the runtime's messages).
std::vector<double> node_seconds(const StepGraph& graph, const ShardLayout& layout,
                                 const std::vector<double>& compute, const std::vector<double>& acq_kernel,
                                 double update_s) {
  double o_total = 0;
  for (int r = 0; r < layout.num_ranges(); ++r) o_total += double(layout.shard_numel(ModelState::optim, r));
  std::vector<double> out(graph.nodes().size(), 0.0);
  for (std::size_t n = 0; n < out.size(); ++n) {
    const StepNode& node = graph.nodes()[n];
    if (node.op == StepOp::forward || node.op == StepOp::backward)
      out[n] = compute[node.acquisition] + acq_kernel[node.acquisition];
    else if (node.op == StepOp::adamw && o_total > 0)
      out[n] = update_s * double(layout.shard_numel(ModelState::optim, node.range)) / o_total;
    else if (node.op == StepOp::optimizer)
      out[n] = update_s;
  }
  return out;
}

// `steps` copies of the graph back to back (task k * N + n is node n of step k), with each node's
// seconds and extra conditions within its step (`joins`); a node's conditions on the previous step
// bind from the second copy on.
std::vector<TimelineTask> unroll(const StepGraph& graph, const std::vector<double>& seconds,
                                 const std::vector<std::vector<int>>& joins, int steps) {
  const int N = static_cast<int>(graph.nodes().size());
  std::vector<TimelineTask> tasks;
  tasks.reserve(static_cast<std::size_t>(N) * steps);
  for (int k = 0; k < steps; ++k)
    for (int n = 0; n < N; ++n) {
      const StepNode& node = graph.nodes()[n];
      TimelineTask t{.stream = node.stream == StepStream::compute ? TimelineTask::Stream::compute
                                                                  : TimelineTask::Stream::comm,
                     .seconds = seconds[n]};
      for (int d : node.after_start) t.after_start.push_back(k * N + d);
      for (int d : node.after_end) t.after_end.push_back(k * N + d);
      for (int d : joins[n]) t.after_end.push_back(k * N + d);
      if (k > 0)
        for (int d : node.after_previous_end) t.after_end.push_back((k - 1) * N + d);
      tasks.push_back(std::move(t));
    }
  return tasks;
}

void check_cost_inputs(const Topology& topo, const CostOptions& options) {
  TZ_CHECK(topo.resolved(), "cost model needs a resolved topology");
  if (!(topo.device().peak_tflops > 0))
    fail_input("topology {}: device.peak_tflops is needed by the cost model (calibrate or add it)",
               topo.name());
  if (!(options.achievable_fraction > 0 && options.achievable_fraction <= 1))
    fail_input("cost model: achievable fraction of peak must be in (0, 1], got {}",
               options.achievable_fraction);
  if (!(options.kernel_efficiency > 0 && options.kernel_efficiency <= 1))
    fail_input("cost model: kernel efficiency must be in (0, 1], got {}", options.kernel_efficiency);
  if (options.host_cores < 0 || options.local_ranks < 0 ||
      (options.host_cores > 0) != (options.local_ranks > 0))
    fail_input("cost model: host cores and local ranks go together and must be >= 1 (got {} and {})",
               options.host_cores, options.local_ranks);
  if (!(options.link_efficiency > 0 && options.link_efficiency <= 1))
    fail_input("cost model: link efficiency must be in (0, 1], got {}", options.link_efficiency);
  if (!(options.message_overhead_us >= 0) || !std::isfinite(options.message_overhead_us))
    fail_input("cost model: message overhead must be >= 0 us, got {}", options.message_overhead_us);
  if (!(options.bucket_elements >= 0) || !std::isfinite(options.bucket_elements))
    fail_input("cost model: bucket elements must be >= 0 (0 = the runtime's own), got {}",
               options.bucket_elements);
}

}  // namespace

PlannedStep plan_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan) {
  const ModelRanges mr = model_ranges(model.config);
  std::vector<RangeSpec> ranges;
  for (std::size_t i = 0; i < mr.names.size(); ++i) ranges.push_back(RangeSpec{mr.names[i], mr.numel[i]});
  ShardLayout layout(std::move(ranges), topo, plan);
  AcquisitionOrder order{mr.forward, mr.backward};
  StepSchedule schedule(layout, order);
  return PlannedStep{std::move(layout), std::move(schedule), std::move(order)};
}

StepCost predict_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                      const CostOptions& options) {
  check_cost_inputs(topo, options);
  const DeviceSpec& dev = topo.device();

  const GptConfig& cfg = model.config;
  const PlanOptions& po = plan.options();
  const int seq = model.seq_len(), b = po.micro_batch_size, accum = po.grad_accum_steps;
  const ModelRanges mr = model_ranges(cfg);
  const PlannedStep planned = plan_step(model, topo, plan);
  const ShardLayout& layout = planned.layout;
  const StepSchedule& schedule = planned.schedule;
  const auto& cols = schedule.collectives();
  const StepGraph graph(layout, schedule, planned.order, options.boundary);

  // Compute per acquisition of one micro-batch: forward then backward.
  const double rate = dev.peak_tflops * 1e12 * options.achievable_fraction;
  const double layer_fwd = layer_forward_flops(cfg, seq) * b / rate;
  const double head_fwd = head_forward_flops(cfg, seq) * b / rate;
  auto is_head = [&](const std::vector<int>& order, std::size_t i) {
    if (order[i] != mr.head) return false;
    return (i > 0 && order[i - 1] == mr.final_ln) || (i + 1 < order.size() && order[i + 1] == mr.final_ln);
  };
  std::vector<double> micro;
  for (std::size_t i = 0; i < mr.forward.size(); ++i)
    micro.push_back(is_block_range(cfg, mr.forward[i]) ? layer_fwd : is_head(mr.forward, i) ? head_fwd : 0.0);
  for (std::size_t i = 0; i < mr.backward.size(); ++i)
    micro.push_back(is_block_range(cfg, mr.backward[i]) ? (options.recompute ? 3 : 2) * layer_fwd
                    : is_head(mr.backward, i)           ? 2 * head_fwd
                                                        : 0.0);
  const int per_micro = static_cast<int>(micro.size());
  const int n_acq = per_micro * accum;

  Pricer pricer{topo, layout, options, quant_kernel_bytes_per_s(dev, options.kernel_efficiency),
                scheduler_wait_s(options)};
  const double bucket = options.bucket_elements > 0             ? options.bucket_elements
                        : options.runtime == Runtime::deepspeed ? kDeepSpeedReduceBucketElements
                                                                : 0.0;

  // Pass items (gathers per acquisition, reductions per bucket) and boundary items, in schedule order.
  std::vector<Item> pass, boundary;
  std::vector<double> acq_kernel(n_acq, 0.0);
  std::vector<int> pending;  // reductions of the current bucket (schedule indices)
  double pending_elements = 0;
  auto same_kind = [&](const ScheduledCollective& a, const ScheduledCollective& c) {
    return a.kind == c.kind && a.tiers == c.tiers && a.dtype == c.dtype && a.quant_bits == c.quant_bits &&
           a.steps.size() == c.steps.size() && a.micro_batch == c.micro_batch;
  };
  auto reduction_item = [&](const std::vector<int>& members, double elements, int messages) {
    const ScheduledCollective& t = cols[members.back()];
    Item item{.c = &t, .collectives = members};
    const double scale = elements / double(layout.padded_numel(t.range)) / messages;
    pricer.price(item, t, std::vector<double>(messages, scale));
    if (t.quant_bits == 4) {
      pricer.kernels_needed = true;
      item.kernel_s = pricer.qgz_kernel_s(t, elements);
      item.seconds += item.kernel_s;
    }
    for (int i : members)
      for (const TierStep& st : cols[i].steps) part(item, st.label).bytes += st.bytes;
    pass.push_back(std::move(item));
  };
  auto flush = [&] {
    if (!pending.empty()) reduction_item(pending, pending_elements, 1);
    pending.clear();
    pending_elements = 0;
  };
  for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
    const ScheduledCollective& c = cols[i];
    if (c.phase == StepPhase::boundary || c.phase == StepPhase::scalar) {
      Item item{.c = &c, .collectives = {i}};
      pricer.price(item, c, {1.0});
      for (const TierStep& st : c.steps) part(item, st.label).bytes += st.bytes;
      boundary.push_back(std::move(item));
      continue;
    }
    TZ_CHECK(c.micro_batch >= 0 && c.micro_batch < accum, "micro-batch {}", c.micro_batch);
    if (c.purpose == CollectivePurpose::grad_reduce) {
      const double n = double(layout.padded_numel(c.range));
      if (bucket <= 0) {
        reduction_item({i}, n, 1);
        continue;
      }
      if (!pending.empty() && !same_kind(cols[pending.back()], c)) flush();
      if (n >= bucket) {
        flush();
        reduction_item({i}, n, static_cast<int>(std::ceil(n / bucket)));
        continue;
      }
      if (pending_elements + n > bucket) flush();
      pending.push_back(i);
      pending_elements += n;
      continue;
    }
    Item item{.c = &c, .collectives = {i}};
    const int acquisition = graph.nodes()[graph.collective_node(i)].acquisition;  // the one it serves
    TZ_CHECK(c.purpose == CollectivePurpose::weight_gather_fwd ||
                 c.purpose == CollectivePurpose::weight_gather_bwd,
             "unexpected {} in a pass", collective_purpose_name(c.purpose));
    const std::vector<double> scales = gather_scales(mr, c.range, options.runtime);
    pricer.price(item, c, scales);
    if (c.quant_bits == 8) {
      pricer.kernels_needed = true;
      const double k = pricer.qwz_kernel_s(c, scales);
      if (options.runtime == Runtime::deepspeed) {
        item.compute_kernel_s = k;
        acq_kernel[acquisition] += k;
      } else {
        item.kernel_s = k;
        item.seconds += k;
      }
    }
    for (const TierStep& st : c.steps) part(item, st.label).bytes += st.bytes;
    pass.push_back(std::move(item));
  }
  flush();

  StepCost out;
  out.plan = plan.name();
  out.runtime = std::string(runtime_name(options.runtime));
  out.boundary = std::string(boundary_mode_name(options.boundary));
  out.world_size = topo.world_size();
  out.kernels_priced = !pricer.kernels_needed || pricer.kernel_rate > 0;
  const MemoryPlan mem0 = plan_memory(layout);
  const double o_elements = double(mem0.optim_bytes) / 12.0;
  // The engine's non-finite check before the vote reads nothing on a steady step (the last update's
  // bound proves its count 0: device/cpu/adamw.hpp); only a first step or one after a restore reads the
  // state, and a steady step is what is priced.
  const double update_s = dev.memory_bandwidth_GBps > 0
                              ? o_elements * kAdamBytesPerElement / (dev.memory_bandwidth_GBps * 1e9)
                              : 0.0;
  out.optimizer_s = update_s;
  // Ranks that compute on the cores which run their collectives (host_cores given): every rank's
  // collective CPU (its messages' and the quantization kernels it runs inside them) takes those cores
  // from compute, local_ranks / host_cores seconds of a rank's compute per CPU second, spread over its
  // forward and backward in proportion (the collectives run all through the passes).
  double model_s = 0, collective_cpu = 0;
  for (double m : micro) model_s += m * accum;
  for (const auto* items : {&pass, &boundary})
    for (const Item& it : *items) collective_cpu += it.cpu_s + it.kernel_s;
  if (options.host_cores > 0 && model_s > 0)
    out.collective_cpu_s = collective_cpu * double(options.local_ranks) / options.host_cores;
  const double stretch = model_s > 0 ? 1 + out.collective_cpu_s / model_s : 1.0;
  std::vector<double> compute(n_acq);
  for (int a = 0; a < n_acq; ++a) compute[a] = micro[a % per_micro] * stretch;
  for (double c : compute) out.compute_s += c;
  for (double k : acq_kernel) out.kernel_s += k;

  std::vector<double> item_exposed(pass.size() + boundary.size(), 0.0);
  auto item_at = [&](std::size_t k) -> Item& {
    return k < pass.size() ? pass[k] : boundary[k - pass.size()];
  };
  if (!options.overlap) {
    double comm = 0;
    for (std::size_t k = 0; k < item_exposed.size(); ++k)
      comm += item_at(k).seconds, item_exposed[k] = item_at(k).seconds;
    out.step_s = out.compute_s + out.kernel_s + out.optimizer_s + comm;
  } else {
    // The step graph, each node with its time, run for kSteps steps in a row.
    const std::vector<double> node_s = node_seconds(graph, layout, compute, acq_kernel, update_s);
    const int N = static_cast<int>(graph.nodes().size());
    // The runtime's messages: an item is one collective, or a bucket of gradient reductions that runs
    // as its last member (the other members take no time and end with it).
    std::vector<int> node_item(N, -1);
    std::vector<double> seconds = node_s;
    std::vector<std::vector<int>> joins(N);
    for (std::size_t k = 0; k < item_exposed.size(); ++k) {
      const Item& it = item_at(k);
      const int rep = graph.collective_node(it.collectives.back());
      seconds[rep] = it.seconds;
      for (int ci : it.collectives) {
        const int n = graph.collective_node(ci);
        node_item[n] = static_cast<int>(k);
        if (n != rep) joins[n].push_back(rep);
      }
    }
    const std::vector<TimelineTask> tasks = unroll(graph, seconds, joins, kSteps);
    // Steady period: from the second step's first compute to the third's.
    const Timeline tl = run_timeline(tasks);
    const double lo = tl.start_s[N], hi = tl.start_s[2 * N];
    const std::vector<double> exposed = exposure_in_window(tasks, tl, lo, hi);
    out.step_s = hi - lo;
    for (std::size_t t = 0; t < tasks.size(); ++t)
      if (node_item[t % N] >= 0) item_exposed[node_item[t % N]] += exposed[t];
    std::vector<std::pair<double, int>> issued;  // the second step's boundary collectives by issue time
    for (int n = 0; n < N; ++n) {
      const StepNode& node = graph.nodes()[n];
      if (node.op != StepOp::collective) continue;
      const ScheduledCollective& c = cols[node.collective];
      if (c.phase == StepPhase::boundary || c.phase == StepPhase::scalar)
        issued.push_back({tl.issue_s[N + n], n});
    }
    std::stable_sort(issued.begin(), issued.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [when, n] : issued) {
      const ScheduledCollective& c = cols[graph.nodes()[n].collective];
      out.boundary_order.push_back({std::string(collective_purpose_name(c.purpose)), c.range});
    }
    for (const PathLink& l : critical_path(tasks, tl, 2 * N, lo)) {
      const int step = l.task / N, n = l.task % N;
      out.critical_path.push_back(
          {.what = graph.node_name(n) + (step == 0 ? " (previous step)" : ""),
           .group = graph.nodes()[n].op == StepOp::collective
                        ? std::string(collective_purpose_name(cols[graph.nodes()[n].collective].purpose))
                        : "compute",
           .compute = graph.nodes()[n].stream == StepStream::compute,
           .start_s = l.from_s - lo,
           .seconds = l.to_s - l.from_s});
    }
  }
  out.exposed_comm_s = std::max(0.0, out.step_s - out.compute_s - out.kernel_s - out.optimizer_s);

  const StepFlops flops = step_flops(cfg, seq, b, accum, options.recompute);
  out.model_flops = flops.model;
  out.executed_flops = flops.executed;
  out.tflops_per_device = flops.model / out.step_s / 1e12;
  out.tokens_per_step = double(seq) * b * accum * topo.world_size();

  // Per tier and per (purpose, label).
  const auto bytes = schedule.bytes_per_tier();
  const std::vector<std::string>& labels = schedule.labels();
  for (const auto& name : labels) out.tiers.push_back(TierCost{.name = name, .bytes = bytes.at(name)});
  auto tier_of = [&](const std::string& label) -> TierCost& {
    return *std::find_if(out.tiers.begin(), out.tiers.end(),
                         [&](const TierCost& t) { return t.name == label; });
  };
  for (std::size_t k = 0; k < item_exposed.size(); ++k) {
    const Item& it = item_at(k);
    double busy = 0;
    for (const auto& p : it.parts) busy += p.busy_s;
    for (const auto& p : it.parts) {
      const double share = busy > 0 ? p.busy_s / busy : 1.0 / it.parts.size();
      const double kernel = it.kernel_s * share;
      const double exposed = item_exposed[k] * share;
      TierCost& tc = tier_of(p.label);
      tc.busy_s += p.busy_s + kernel;
      tc.exposed_s += exposed;
      std::string kind = std::string(collective_name(it.c->kind));
      kind += it.c->quant_bits ? fmt::format(" INT{}", it.c->quant_bits)
                               : fmt::format(" {}", dtype_name(it.c->dtype));
      const std::string purpose(collective_purpose_name(it.c->purpose));
      auto row = std::find_if(out.comms.begin(), out.comms.end(), [&](const CommCost& c) {
        return c.purpose == purpose && c.label == p.label && c.kind == kind;
      });
      if (row == out.comms.end()) {
        out.comms.push_back(CommCost{.purpose = purpose, .kind = kind, .label = p.label});
        row = out.comms.end() - 1;
      }
      row->collectives += static_cast<int>(it.collectives.size());
      row->messages += p.messages;
      row->bytes += p.bytes;
      row->busy_s += p.busy_s + kernel;
      row->exposed_s += exposed;
      row->latency_s += p.latency_s;
      row->bandwidth_s += p.bandwidth_s;
      row->reduce_s += p.reduce_s;
      row->kernel_s += kernel;
      row->measured = row->measured || p.measured;
      row->bound_tier = topo.tier(p.bound_tier).name;
    }
  }

  const ActivationBytes act = activation_bytes(cfg, seq, b, options.recompute);
  out.memory = plan_memory(layout, static_cast<std::size_t>(act.total()));
  out.capacity_bytes = dev.memory_gib * double(1ull << 30);
  out.fits = out.capacity_bytes <= 0 || double(out.memory.peak_bytes()) <= out.capacity_bytes;

  // What bounds the step: memory if it does not fit, else the largest of compute, kernels, the
  // optimizer and each label's exposed time split into latency and bandwidth (by its busy parts).
  if (!out.fits) {
    out.bound = fmt::format("memory: needs {:.1f} GiB of {:.1f}",
                            double(out.memory.peak_bytes()) / double(1ull << 30),
                            out.capacity_bytes / double(1ull << 30));
  } else {
    std::vector<std::pair<double, std::string>> parts = {{out.compute_s, "compute"},
                                                         {out.kernel_s, "quantization kernels"},
                                                         {out.optimizer_s, "optimizer (memory bandwidth)"}};
    std::map<std::string, std::pair<double, double>> by_label;  // label -> (latency, bandwidth) exposed
    for (const auto& c : out.comms) {
      const double parts_s = c.latency_s + c.bandwidth_s + c.reduce_s + c.kernel_s;
      if (parts_s <= 0) continue;
      by_label[c.label].first += c.exposed_s * c.latency_s / parts_s;
      by_label[c.label].second += c.exposed_s * (c.bandwidth_s + c.reduce_s + c.kernel_s) / parts_s;
    }
    for (const auto& [label, lb] : by_label) {
      parts.push_back({lb.first, label + " latency"});
      parts.push_back({lb.second, label + " bandwidth"});
    }
    std::stable_sort(parts.begin(), parts.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < parts.size() && i < 3 && parts[i].first > 0; ++i)
      out.bound +=
          fmt::format("{}{} {:.0f}%", i ? ", " : "", parts[i].second, 100 * parts[i].first / out.step_s);
  }
  return out;
}

}  // namespace tz::perf
