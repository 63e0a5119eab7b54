// The step graph: one training step as operations on two in-order streams (one computing, one
// communicating) with the conditions under which each may start. It is the single description of
// the step's order that the engine runs (a test holds the engine's executed order to it, node by
// node) and the cost model prices (perf/step_cost.hpp gives each node a time and runs the graph on
// its two-stream timeline, several steps in a row).
//
// Nodes of one step, in list order (a stream runs its nodes in list order; comm nodes are served in
// order of the time their conditions hold, ties in list order):
//   compute  the acquisitions of every micro-batch: forward positions 0..nf-1, then backward
//            positions 0..nb-1 (AcquisitionOrder), each one range's forward or backward compute;
//            then the boundary's computes:
//              pipelined: backward_done (every gradient reduction and boundary reduction ended),
//                         optimizer_check (the global norm known: the non-finite count of AdamW),
//                         adamw per range in order of first forward use (waits for the vote);
//              exposed:   backward_done (the passes' reductions ended), reductions_done (every
//                         G -> O reduce-scatter ended), replicas_done (every replica all-reduce
//                         ended), optimizer (all of AdamW; waits for the vote), refreshes_done
//                         (every refresh ended), step_done (the loss ended).
//   comm     the schedule's collectives in schedule order, one node each:
//              a weight gather for acquisition a is issued at the start of acquisition
//              a - prefetch_depth (prefetch 0: at the end of acquisition a - 1), and acquisition a
//              waits for its end; pipelined, it also waits for the previous step's refresh of its
//              range (its AdamW when nothing is refreshed); exposed, for the previous step's step_done;
//            a gradient reduction is issued at the end of the acquisition after which its range's
//              gradient is final (grads_ready order), and backward_done waits for it;
//            the boundary (as BoundaryMode says): G -> O after the range's last reduction of the
//              last micro-batch (pipelined) or backward_done (exposed); the replica all-reduce after
//              the range's G -> O; the grad norm after backward_done (or replicas_done); the vote
//              after optimizer_check (or the norm); a refresh after its range's AdamW (or the
//              optimizer); the loss after the last micro-batch's last forward (or refreshes_done).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan/shard_layout.hpp"
#include "plan/step_schedule.hpp"

namespace tz {

// How the step boundary runs.
//   pipelined  as the engine runs it (the default): each range's G -> O reduce-scatter and replica
//              all-reduce start as soon as its gradient is final, during the last backward; AdamW
//              range by range, each range's refresh issued at once, waited for by the next forward
//              where it first uses the range; the loss all-reduce during the last backward.
//   exposed    everything after the last backward, one phase after another, as DeepSpeed's optimizer
//              step runs it; nothing of the boundary overlaps compute.
enum class BoundaryMode : std::uint8_t { exposed, pipelined };
std::string_view boundary_mode_name(BoundaryMode m);

enum class StepOp : std::uint8_t {
  forward,          // compute: one acquisition's forward
  backward,         // compute: one acquisition's backward
  backward_done,    // compute (join): the passes' reductions (pipelined: and the boundary's) ended
  optimizer_check,  // compute: AdamW's non-finite count (no pass over memory on a steady step)
  adamw,            // compute: AdamW of one range's O shard
  reductions_done,  // compute (join, exposed): every G -> O reduce-scatter ended
  replicas_done,    // compute (join, exposed): every replica all-reduce ended
  optimizer,        // compute (exposed): AdamW of the whole O shard
  refreshes_done,   // compute (join, exposed): every weight refresh ended
  step_done,        // compute (join, exposed): the loss ended; the next step starts after it
  collective,       // comm: one collective of the schedule
};
std::string_view step_op_name(StepOp op);

enum class StepStream : std::uint8_t { compute, comm };

struct StepNode {
  StepOp op = StepOp::forward;
  StepStream stream = StepStream::compute;
  int micro_batch = -1;               // forward, backward and the passes' collectives
  int position = -1;                  // forward/backward: index into AcquisitionOrder::forward/backward
  int acquisition = -1;               // forward/backward: index among the step's acquisitions
  int range = -1;                     // forward, backward, adamw and per-range collectives
  int collective = -1;                // collective: index into StepSchedule::collectives()
  std::vector<int> after_start = {};  // nodes of this step whose start this one waits for
  std::vector<int> after_end = {};    // nodes of this step whose end this one waits for
  std::vector<int> after_previous_end = {};  // nodes of the previous step (none in a first step)
};

class StepGraph {
 public:
  // The layout gives the accumulation and prefetch depth (its plan's options); `order` must be the
  // one the schedule was built with.
  StepGraph(const ShardLayout& layout, const StepSchedule& schedule, const AcquisitionOrder& order,
            BoundaryMode mode = BoundaryMode::pipelined);

  const std::vector<StepNode>& nodes() const { return nodes_; }
  BoundaryMode mode() const { return mode_; }
  int acquisitions() const { return acquisitions_; }  // per step (every micro-batch)
  // The node of the schedule's collective i.
  int collective_node(int i) const { return collective_node_.at(i); }
  // The node of forward (backward) position `position` of micro-batch m.
  int forward_node(int micro_batch, int position) const;
  int backward_node(int micro_batch, int position) const;
  // The first node of `op` (for range `range` when the op is per range), -1 when the graph has none.
  int find(StepOp op, int range = -1) const;
  // A short name: "forward mb0 h.3", "W_fwd all-gather h.3 mb0", "adamw wte", "grad-norm all-reduce".
  std::string node_name(int node) const;

 private:
  int add(StepNode node);

  std::vector<std::string> range_names_;
  std::vector<CollectivePurpose> purposes_;  // per schedule collective
  BoundaryMode mode_;
  int acquisitions_ = 0;
  int forward_per_micro_ = 0, backward_per_micro_ = 0;
  std::vector<StepNode> nodes_;
  std::vector<int> collective_node_;
};

}  // namespace tz
