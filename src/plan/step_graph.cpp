// The step graph (step_graph.hpp): the acquisitions, the boundary's computes and the schedule's
// collectives with the conditions under which each starts.
#include "plan/step_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace tz {

std::string_view boundary_mode_name(BoundaryMode m) {
  return m == BoundaryMode::exposed ? "exposed" : "pipelined";
}

std::string_view step_op_name(StepOp op) {
  switch (op) {
    case StepOp::forward:
      return "forward";
    case StepOp::backward:
      return "backward";
    case StepOp::backward_done:
      return "backward done";
    case StepOp::optimizer_check:
      return "optimizer check";
    case StepOp::adamw:
      return "adamw";
    case StepOp::reductions_done:
      return "reductions done";
    case StepOp::replicas_done:
      return "replicas done";
    case StepOp::optimizer:
      return "optimizer";
    case StepOp::refreshes_done:
      return "refreshes done";
    case StepOp::step_done:
      return "step done";
    case StepOp::collective:
      return "collective";
  }
  return "?";
}

int StepGraph::add(StepNode node) {
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

StepGraph::StepGraph(const ShardLayout& layout, const StepSchedule& schedule, const AcquisitionOrder& order,
                     BoundaryMode mode)
    : mode_(mode) {
  const int R = layout.num_ranges();
  for (const auto& r : layout.ranges()) range_names_.push_back(r.name);
  const auto& cols = schedule.collectives();
  for (const auto& c : cols) purposes_.push_back(c.purpose);
  const int accum = layout.plan().options().grad_accum_steps;
  const int depth = layout.plan().options().prefetch_depth;
  const bool pipelined = mode == BoundaryMode::pipelined;
  forward_per_micro_ = static_cast<int>(order.forward.size());
  backward_per_micro_ = static_cast<int>(order.backward.size());
  const int nf = forward_per_micro_, per_micro = nf + backward_per_micro_;
  acquisitions_ = per_micro * accum;

  // The acquisitions, micro-batch after micro-batch (node id = acquisition index).
  for (int m = 0; m < accum; ++m) {
    for (int i = 0; i < nf; ++i)
      add({.op = StepOp::forward,
           .micro_batch = m,
           .position = i,
           .acquisition = m * per_micro + i,
           .range = order.forward[i]});
    for (int j = 0; j < backward_per_micro_; ++j)
      add({.op = StepOp::backward,
           .micro_batch = m,
           .position = j,
           .acquisition = m * per_micro + nf + j,
           .range = order.backward[j]});
  }
  // The boundary's computes, in stream order after the passes.
  const int backward_done = add({.op = StepOp::backward_done});
  std::vector<int> adam(R, -1);
  int check = -1, reductions_done = -1, replicas_done = -1, optimizer = -1, refreshes_done = -1,
      step_done = -1;
  if (pipelined) {
    check = add({.op = StepOp::optimizer_check});
    for (int r : order.forward)  // AdamW in order of first forward use
      if (adam[r] < 0) adam[r] = add({.op = StepOp::adamw, .range = r});
  } else {
    reductions_done = add({.op = StepOp::reductions_done});
    replicas_done = add({.op = StepOp::replicas_done});
    optimizer = add({.op = StepOp::optimizer});
    refreshes_done = add({.op = StepOp::refreshes_done});
    step_done = add({.op = StepOp::step_done});
  }

  // The acquisition after which each range's gradient is final in a micro-batch (the schedule's
  // grads_ready rule: as early as its last backward acquisition and the events before it allow).
  std::vector<int> last_bwd(R, -1);
  for (int j = 0; j < backward_per_micro_; ++j) last_bwd[order.backward[j]] = j;
  std::vector<int> ready_at = last_bwd;
  for (int k = 0, at = 0; k < static_cast<int>(order.grads_ready.size()); ++k) {
    at = std::max(at, last_bwd[order.grads_ready[k]]);
    ready_at[order.grads_ready[k]] = at;
  }

  // The collectives in schedule order.
  collective_node_.assign(cols.size(), -1);
  std::vector<int> fwd_seen(accum, 0), bwd_seen(accum, 0);
  std::vector<int> range_final(R, -1);  // the last micro-batch: the range's gradient is final
  for (int r = 0; r < R; ++r)
    if (ready_at[r] >= 0) range_final[r] = (accum - 1) * per_micro + nf + ready_at[r];
  std::vector<int> boundary_reduce(R, -1), refresh(R, -1);
  int grad_norm = -1, vote = -1;
  for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
    const ScheduledCollective& c = cols[i];
    StepNode node{.op = StepOp::collective,
                  .stream = StepStream::comm,
                  .micro_batch = c.micro_batch,
                  .range = c.range,
                  .collective = i};
    const int r = c.range;
    switch (c.purpose) {
      case CollectivePurpose::weight_gather_fwd:
      case CollectivePurpose::weight_gather_bwd: {
        const int base = c.micro_batch * per_micro;
        const int a = c.purpose == CollectivePurpose::weight_gather_fwd
                          ? base + fwd_seen[c.micro_batch]++
                          : base + nf + schedule.reused_in_backward() + bwd_seen[c.micro_batch]++;
        TZ_CHECK(a < acquisitions_ && nodes_[a].range == r, "gather of range {} for acquisition {}", r, a);
        node.acquisition = a;
        if (depth == 0 && a > 0) node.after_end.push_back(a - 1);
        if (depth > 0 && a - depth > 0) node.after_start.push_back(a - depth);
        if (!pipelined) node.after_previous_end.push_back(step_done);
        // Pipelined: the previous step's refresh of the range (its AdamW when nothing is refreshed);
        // filled in once the refreshes are known.
        const int id = add(std::move(node));
        nodes_[a].after_end.push_back(id);
        collective_node_[i] = id;
        continue;
      }
      case CollectivePurpose::grad_reduce: {
        TZ_CHECK(ready_at[r] >= 0, "range {} is never reported ready", r);
        node.acquisition = c.micro_batch * per_micro + nf + ready_at[r];
        node.after_end.push_back(node.acquisition);
        const int id = add(std::move(node));
        nodes_[backward_done].after_end.push_back(id);
        if (c.micro_batch == accum - 1) range_final[r] = id;
        collective_node_[i] = id;
        continue;
      }
      case CollectivePurpose::grad_boundary_reduce:
        node.after_end.push_back(pipelined ? range_final[r] : backward_done);
        break;
      case CollectivePurpose::grad_replica_reduce:
        if (pipelined)
          node.after_end.push_back(boundary_reduce[r] >= 0 ? boundary_reduce[r] : range_final[r]);
        else
          node.after_end.push_back(reductions_done);
        break;
      case CollectivePurpose::grad_norm:
        node.after_end.push_back(pipelined ? backward_done : replicas_done);
        break;
      case CollectivePurpose::nonfinite_flag:
        // The vote carries the optimizer's check, which needs the norm.
        node.after_end.push_back(pipelined ? check : grad_norm >= 0 ? grad_norm : replicas_done);
        break;
      case CollectivePurpose::weight_refresh:
        node.after_end.push_back(pipelined ? adam[r] : optimizer);
        break;
      case CollectivePurpose::loss_sum:
        // Pipelined: issued as the last micro-batch's forward ends.
        node.after_end.push_back(pipelined ? (accum - 1) * per_micro + nf - 1 : refreshes_done);
        break;
    }
    const int id = add(std::move(node));
    collective_node_[i] = id;
    switch (c.purpose) {
      case CollectivePurpose::grad_boundary_reduce:
        boundary_reduce[r] = id;
        nodes_[pipelined ? backward_done : reductions_done].after_end.push_back(id);
        break;
      case CollectivePurpose::grad_replica_reduce:
        nodes_[pipelined ? backward_done : replicas_done].after_end.push_back(id);
        break;
      case CollectivePurpose::grad_norm:
        grad_norm = id;
        if (pipelined) nodes_[check].after_end.push_back(id);
        break;
      case CollectivePurpose::nonfinite_flag:
        vote = id;
        break;
      case CollectivePurpose::weight_refresh:
        refresh[r] = id;
        if (!pipelined) nodes_[refreshes_done].after_end.push_back(id);
        break;
      case CollectivePurpose::loss_sum:
        if (!pipelined) nodes_[step_done].after_end.push_back(id);
        break;
      default:
        break;
    }
  }
  // AdamW waits for the scalars that decide it (the vote, else the norm).
  const int decides = vote >= 0 ? vote : grad_norm;
  if (decides >= 0) nodes_[pipelined ? adam[order.forward.front()] : optimizer].after_end.push_back(decides);
  if (!pipelined) {
    nodes_[0].after_previous_end.push_back(step_done);
  } else {
    for (StepNode& n : nodes_)
      if (n.op == StepOp::collective && (purposes_[n.collective] == CollectivePurpose::weight_gather_fwd ||
                                         purposes_[n.collective] == CollectivePurpose::weight_gather_bwd))
        n.after_previous_end.push_back(refresh[n.range] >= 0 ? refresh[n.range] : adam[n.range]);
  }
}

int StepGraph::forward_node(int micro_batch, int position) const {
  TZ_CHECK(position >= 0 && position < forward_per_micro_, "forward position {}", position);
  return micro_batch * (forward_per_micro_ + backward_per_micro_) + position;
}

int StepGraph::backward_node(int micro_batch, int position) const {
  TZ_CHECK(position >= 0 && position < backward_per_micro_, "backward position {}", position);
  return micro_batch * (forward_per_micro_ + backward_per_micro_) + forward_per_micro_ + position;
}

int StepGraph::find(StepOp op, int range) const {
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i)
    if (nodes_[i].op == op && (range < 0 || nodes_[i].range == range)) return i;
  return -1;
}

std::string StepGraph::node_name(int id) const {
  const StepNode& n = nodes_.at(id);
  const std::string range = n.range >= 0 ? " " + range_names_.at(n.range) : "";
  const std::string micro = n.micro_batch >= 0 ? fmt::format(" mb{}", n.micro_batch) : "";
  if (n.op == StepOp::collective)
    return fmt::format("{}{}{}", collective_purpose_name(purposes_[n.collective]), range, micro);
  return fmt::format("{}{}{}", step_op_name(n.op), micro, range);
}

}  // namespace tz
