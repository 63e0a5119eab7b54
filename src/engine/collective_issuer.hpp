// How the engine issues the plan's collectives: each is the layout's request for (purpose, range)
// (plan/step_schedule.hpp's collective_request) run through run_collective, non-blocking, optionally
// behind another Work. The issuer adds each one's planned bytes per tier (its plan's steps, the
// bytes the communicators record in the traffic ledger as the steps complete) to the step's
// traffic: a step leaves its weight refresh in flight, so a ledger difference taken when step()
// returns would miss it. With tracing on, every collective the step schedule lists is recorded as
// it is issued, so a test can hold the engine's issue order to StepSchedule::collectives().
#pragma once

#include <map>
#include <string>
#include <vector>

#include "comm/mesh.hpp"
#include "comm/traffic.hpp"
#include "core/quant_format.hpp"
#include "engine/step_trace.hpp"
#include "plan/step_schedule.hpp"

namespace tz {

// One issued collective, as the step schedule names it: micro_batch is -1 for the boundary's
// collectives and the scalars (their ScheduledCollective::micro_batch), range -1 for the scalars.
struct IssuedCollective {
  CollectivePurpose purpose = CollectivePurpose::weight_gather_fwd;
  int micro_batch = -1;
  int range = -1;
  bool operator==(const IssuedCollective&) const = default;
};

// The schedule's list in the same form, for comparison with a trace.
std::vector<IssuedCollective> issue_order(const StepSchedule& schedule);

class CollectiveIssuer {
 public:
  CollectiveIssuer(Mesh& mesh, const ShardLayout& layout);

  // run_collective(mesh, collective_request(layout, purpose, range), ...): reads `send` once `after`
  // is done; quantizers add their non-finite block counts to *stats by the time the Work completes.
  Work issue(CollectivePurpose purpose, int range, const void* send, void* recv, QuantStats* stats = nullptr,
             const Work& after = {});

  // The micro-batch the forward and backward collectives issued from now on belong to.
  void set_micro_batch(int m) { micro_batch_ = m; }
  void set_tracing(bool on) { tracing_ = on; }
  // Also records every scheduled collective it issues, and the acquisitions the parameter source
  // reports, as nodes of the step graph (when `trace` is enabled).
  void set_step_trace(StepTrace* trace) { step_trace_ = trace; }
  void trace_acquisition(bool backward, int position) {
    if (step_trace_) step_trace_->acquisition(backward, micro_batch_, position);
  }
  // The collectives issued since the last call (empty unless tracing).
  std::vector<IssuedCollective> take_trace();
  // Bytes per tier label of the collectives issued since the last call (bytes and ops; no seconds):
  // every tier of the topology (0 when idle), and the label of every flat group used.
  std::map<std::string, TierTraffic> take_traffic();

 private:
  Mesh& mesh_;
  const ShardLayout& layout_;
  std::vector<std::vector<bool>> listed_;                  // [purpose][range + 1]: does the schedule list it?
  std::vector<std::vector<std::vector<TierStep>>> steps_;  // [purpose][range + 1]: its plan's steps
  int micro_batch_ = 0;
  bool tracing_ = false;
  StepTrace* step_trace_ = nullptr;
  std::vector<IssuedCollective> trace_;
  std::map<std::string, TierTraffic> traffic_;
};

}  // namespace tz
