// The first step's communicator of a plan (collective_after.hpp), by Mesh's own rules: a flat route
// runs on flat_group(tiers); a stepped route's first step runs on its tier's communicator, or on
// group(S) for the tail of a hierarchical all-reduce (as Mesh::prepare creates them).
#include "quant/collective_after.hpp"

namespace tz {

Communicator* first_step_communicator(Mesh& mesh, const CollectivePlan& plan, TierSet tiers) {
  if (plan.steps.empty()) return nullptr;
  if (plan.route == CollectiveRoute::flat) return &mesh.flat_group(tiers);
  const TierStep& s = plan.steps.front();
  return s.tiers == tier_bit(s.tier) ? &mesh.tier(s.tier) : &mesh.group(s.tiers);
}

void start_after(Mesh& mesh, const CollectivePlan& plan, TierSet tiers, const Work& after) {
  if (after.done()) return;
  if (Communicator* c = first_step_communicator(mesh, plan, tiers))
    c->stream_wait(after);
  else
    Work(after).wait();
}

}  // namespace tz
