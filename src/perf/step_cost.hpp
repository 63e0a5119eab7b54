// The cost model of one training step (docs/cost_model.md): for a model, a resolved topology and a
// partition plan, the step time with its breakdown, the bytes per tier, TFLOPS per device and the
// memory per rank, and whether it fits.
//   bytes     the plan's StepSchedule (plan/step_schedule.hpp): the very list of collectives the
//             engine issues; bytes per tier are its bytes_per_tier().
//   messages  how the runtime issues them (perf/runtime_model.hpp): tierzero one per range (gradient
//             reductions coalesced or split into buckets with bucket_elements); DeepSpeed one gather
//             per module and gradient buckets of reduce_bucket_size elements.
//   comm time each message of each tier step by perf/collective_price.hpp (measured curves, or the
//             ring closed forms: one tier, tierzero's shard-ordered flat ring, NCCL's channels).
//   kernels   qwZ and qgZ quantization kernels by perf/kernel_time.hpp: inside the collective
//             (tierzero, and DeepSpeed's qgZ) or on the compute stream before the layer (DeepSpeed's
//             qwZ dequantization).
//   compute   executed FLOPs (perf/step_flops.hpp) at achievable_fraction x the device's peak.
//   overlap   perf/step_timeline.hpp over three consecutive steps: the step time is the steady
//             period between the second and third steps' first compute; the step boundary runs as
//             BoundaryMode says (docs/cost_model.md gives the order of operations of each).
//   optimizer AdamW streams its O shard through memory once: kAdamBytesPerElement bytes per
//             element at the device's memory bandwidth (its non-finite check reads nothing on a
//             steady step: the last update's bound proves it).
//   memory    plan/memory_plan.hpp's states and buffers + perf/activation_memory.hpp's activations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "perf/model_shape.hpp"
#include "perf/runtime_model.hpp"
#include "plan/memory_plan.hpp"
#include "plan/partition_plan.hpp"
#include "plan/shard_layout.hpp"
#include "plan/step_graph.hpp"
#include "plan/step_schedule.hpp"
#include "topology/topology.hpp"

namespace tz::perf {

inline constexpr double kAdamBytesPerElement = 4 * 3 * 2 + 4 + 2;

// The step boundary (gradient reduction up to O, replica all-reduce, scalars, AdamW, weight refresh):
// plan/step_graph.hpp's BoundaryMode, pipelined as the engine runs it (the default) or exposed, as
// DeepSpeed's optimizer step runs it; the step graph gives the order of operations of each.
using ::tz::boundary_mode_name;
using ::tz::BoundaryMode;
BoundaryMode parse_boundary_mode(std::string_view text, std::string_view option);

struct CostOptions {
  // Fraction of the device's peak FLOP/s the model's matmuls achieve. Default: the 38.4% of peak
  // Dash et al. (2023), "Optimizing Distributed Training on Frontier for Large Language Models",
  // measured for a 22B GPT on Frontier's MI250X.
  double achievable_fraction = 0.384;
  bool recompute = true;  // full activation recomputation (needed for a 20B model at s = 2048)
  bool overlap = true;    // overlap per-range gathers and reductions with compute
  Runtime runtime = Runtime::tierzero;
  BoundaryMode boundary = BoundaryMode::pipelined;  // the engine's
  // Gradient-reduction bucket in elements: 0 = the runtime's own (tierzero: one reduction per
  // range; DeepSpeed: reduce_bucket_size = 5e8).
  double bucket_elements = 0;
  // Fraction of memory_bandwidth_GBps the quantization kernels reach when the device has no
  // measured quant_GBps. Assumed 0.8: what streaming kernels (STREAM/BabelStream triad) reach on
  // HBM GPUs; calibrate with bench quant (docs/cost_model.md, "Kernels").
  double kernel_efficiency = 0.8;
  // Host-side cost the runtime adds to every collective call it issues (launch, hooks, bookkeeping),
  // microseconds, on the comm stream. 0 by default: no published figure for either runtime; the
  // validation shows its sensitivity.
  double message_overhead_us = 0;
  // Fraction of its priced bandwidth (measured curve or link figures) a collective reaches during
  // training, when compute kernels share the device and its memory with it; 1 = as benchmarked. Its
  // default is 1: no published figure; the validation shows its sensitivity.
  double link_efficiency = 1;
  // Ranks sharing a host's cores (docs/cost_model.md, "Calibration on this machine"): when more
  // ranks run than the host has cores, every collective call waits for its ranks to be scheduled:
  // (local_ranks / host_cores - 1) scheduler slices per call; and the collectives' host CPU (the
  // tiers' cpu_call_us and cpu_GBps, and the quantization kernels inside them) runs on the cores the
  // ranks compute on, so it is charged to compute (StepCost::collective_cpu_s). 0 = not shared (the
  // default).
  int host_cores = 0;
  int local_ranks = 0;
  // The scheduler's time slice, microseconds; <= 0 = Linux's default (EEVDF base slice 750 us scaled
  // by 1 + floor(log2(min(cores, 8))), sysctl_sched_base_slice with SCHED_TUNABLESCALING_LOG).
  double sched_slice_us = 0;
};

// The scheduler wait the cost model adds to each collective call for ranks sharing a host's cores
// (CostOptions::host_cores / local_ranks), seconds; 0 when the host is not oversubscribed.
double scheduler_wait_s(const CostOptions& options);

struct TierCost {
  std::string name;
  double bytes = 0;      // per rank per step (StepSchedule::bytes_per_tier)
  double busy_s = 0;     // time spent in this tier's collective steps
  double exposed_s = 0;  // share of the step's exposed communication (see docs/cost_model.md)
};

// One row of `plan --explain`: the collectives of one purpose on one step label.
struct CommCost {
  std::string purpose;  // collective_purpose_name
  std::string kind;     // e.g. "all_gather bf16", "all_to_all INT4"
  std::string label;    // the tier (or flat group) the steps run on
  int collectives = 0;  // scheduled collectives per step
  int messages = 0;     // calls the runtime issues for them (per tier step)
  double bytes = 0;     // per rank per step
  double busy_s = 0;
  double exposed_s = 0;
  double latency_s = 0, bandwidth_s = 0, reduce_s = 0, kernel_s = 0;  // busy_s split
  bool measured = false;                                              // priced from a measured curve
  std::string bound_tier = {};  // the tier whose links bound the bandwidth part
};

// One operation of the critical path: a node of the step graph (StepGraph::node_name), its stream,
// its start from the beginning of the steady step and its time on the path.
struct CriticalStep {
  std::string what;
  std::string group;  // "compute", or the collective's purpose (collective_purpose_name)
  bool compute = true;
  double start_s = 0;
  double seconds = 0;
};

struct StepCost {
  std::string plan;
  std::string runtime;
  std::string boundary;
  int world_size = 0;
  double step_s = 0;
  double compute_s = 0;  // forward + backward (+ recompute), collective_cpu_s included
  // Of compute_s: the collectives' host CPU on cores the ranks share (CostOptions::host_cores); 0
  // when not shared or when the topology's tiers give no CPU figures.
  double collective_cpu_s = 0;
  double kernel_s = 0;        // quantization kernels on the compute stream (DeepSpeed's qwZ)
  double exposed_comm_s = 0;  // step_s - compute_s - kernel_s - optimizer_s
  double optimizer_s = 0;
  double model_flops = 0;  // per rank per step
  double executed_flops = 0;
  double tflops_per_device = 0;  // model FLOPs / step time
  double tokens_per_step = 0;    // whole world
  // The schedule's labels (StepSchedule::labels): the topology's tiers innermost first, then the
  // flat groups of a plan with collectives = flat ("world", "gcd+node", ...).
  std::vector<TierCost> tiers;
  std::vector<CommCost> comms;  // by purpose then label, in schedule order
  bool kernels_priced = true;   // false when qwZ/qgZ run but the device gives no memory bandwidth
  std::string bound;            // what bounds the step (docs/cost_model.md, "Explain")
  // The steady step's boundary collectives in the order the model issues them (purpose, range; -1
  // for scalars): the order of operations BoundaryMode documents, for tests against the engine's.
  std::vector<std::pair<std::string, int>> boundary_order;
  // The steady step's critical path (with overlap): the chain of the step graph's operations that
  // decided when the next step could start, earliest first; its seconds add up to step_s.
  std::vector<CriticalStep> critical_path;
  MemoryPlan memory;
  double capacity_bytes = 0;  // device memory; 0 = unknown
  bool fits = true;
};

// The shard layout and step schedule of a plan for the model (ranges and acquisition order from
// model/): what the engine runs and what the cost model and the simulator price.
struct PlannedStep {
  ShardLayout layout;
  StepSchedule schedule;
  AcquisitionOrder order;  // the model's, as the schedule was built
};
PlannedStep plan_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan);

// `topo` must be resolved; the plan's options give micro-batch size, accumulation, prefetch depth.
StepCost predict_step(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                      const CostOptions& options = {});

}  // namespace tz::perf
