// The engine's executed order against its step graph (step_trace.hpp).
#include "engine/step_trace.hpp"

#include <fmt/format.h>

#include <utility>

#include "core/error.hpp"

namespace tz {

StepTrace::StepTrace(const StepGraph& graph, const StepSchedule& schedule) : graph_(graph) {
  const auto& cols = schedule.collectives();
  for (int i = 0; i < static_cast<int>(cols.size()); ++i)
    nodes_of_[Key{cols[i].purpose, cols[i].micro_batch, cols[i].range}].push_back(graph.collective_node(i));
}

void StepTrace::acquisition(bool backward, int micro_batch, int position) {
  if (enabled_)
    executed_.push_back(backward ? graph_.backward_node(micro_batch, position)
                                 : graph_.forward_node(micro_batch, position));
}

void StepTrace::collective(CollectivePurpose purpose, int micro_batch, int range) {
  if (!enabled_) return;
  const Key key{purpose, micro_batch, range};
  const auto it = nodes_of_.find(key);
  const std::size_t n = seen_[key]++;
  executed_.push_back(it != nodes_of_.end() && n < it->second.size() ? it->second[n] : -1);
}

void StepTrace::boundary(StepOp op, int range) {
  if (enabled_) executed_.push_back(graph_.find(op, range));
}

std::vector<int> StepTrace::take() {
  seen_.clear();
  return std::exchange(executed_, {});
}

std::string check_executed_order(const StepGraph& graph, const std::vector<int>& executed) {
  const auto& nodes = graph.nodes();
  const int n = static_cast<int>(nodes.size());
  std::vector<int> at(n, -1);  // position in `executed`
  for (int k = 0; k < static_cast<int>(executed.size()); ++k) {
    const int id = executed[k];
    if (id < 0 || id >= n) return fmt::format("event {} is not a node of the step graph", k);
    if (at[id] >= 0) return fmt::format("{} ran twice (events {} and {})", graph.node_name(id), at[id], k);
    at[id] = k;
  }
  for (int id = 0; id < n; ++id)
    if (at[id] < 0) return fmt::format("{} never ran", graph.node_name(id));
  // Each stream in the graph's order: computes in list order, collectives in schedule order.
  int prev_compute = -1, prev_collective = -1;
  for (int id : executed) {
    const StepNode& node = nodes[id];
    int& prev = node.op == StepOp::collective ? prev_collective : prev_compute;
    const bool in_order =
        prev < 0 || (node.op == StepOp::collective ? nodes[prev].collective < node.collective : prev < id);
    if (!in_order)
      return fmt::format("{} ran after {} on its stream", graph.node_name(id), graph.node_name(prev));
    prev = id;
  }
  // Conditions. An acquisition is recorded as it starts, before the gathers it issues, so its own
  // gather (prefetch 0, or the first ones of a pass) may follow it, before the next computation.
  std::vector<int> next_compute(executed.size() + 1, static_cast<int>(executed.size()));
  for (int k = static_cast<int>(executed.size()) - 1; k >= 0; --k)
    next_compute[k] = nodes[executed[k]].stream == StepStream::compute ? k : next_compute[k + 1];
  for (int id = 0; id < n; ++id) {
    const StepNode& node = nodes[id];
    for (const auto* list : {&node.after_start, &node.after_end})
      for (int d : *list) {
        const bool acquisition = node.op == StepOp::forward || node.op == StepOp::backward;
        const bool issued_by_start = acquisition && nodes[d].stream == StepStream::comm &&
                                     list == &node.after_end && at[d] < next_compute[at[id] + 1];
        if (at[d] > at[id] && !issued_by_start)
          return fmt::format("{} ran before {}, which it waits for", graph.node_name(id), graph.node_name(d));
      }
  }
  return {};
}

}  // namespace tz
