// Starting a planned collective after another Work without waiting for it here: the communicator of
// the plan's first step (the one Mesh::execute issues first; later steps already chain on it) gets a
// stream_wait on `after`, so the collective's data is read only once `after` is done. A plan without
// steps (a group of one, whose Mesh::execute copies at once on the calling thread) waits here instead.
#pragma once

#include "collective/collective_plan.hpp"
#include "comm/communicator.hpp"
#include "comm/mesh.hpp"

namespace tz {

// The communicator Mesh::execute issues `plan`'s first step on; null for a plan without steps.
Communicator* first_step_communicator(Mesh& mesh, const CollectivePlan& plan, TierSet tiers);

// Orders the next collective of `plan` (over `tiers`) after `after` (a no-op for a done Work).
void start_after(Mesh& mesh, const CollectivePlan& plan, TierSet tiers, const Work& after);

}  // namespace tz
