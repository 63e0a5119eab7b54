#include "quant/run_collective.hpp"

#include "quant/collective_after.hpp"
#include "quant/qgz_reduce_scatter.hpp"
#include "quant/qwz_all_gather.hpp"

namespace tz {

Work run_collective(Mesh& mesh, const CollectiveRequest& asked, const void* send, void* recv,
                    QuantStats* stats, const Work& after) {
  const CollectiveRequest request = mesh.with_shared_memory(asked);  // the algorithms that can run here
  const CollectivePlan plan = plan_collective(mesh.topology(), request);
  switch (plan.quant) {
    case CollectiveQuant::none:
      start_after(mesh, plan, request.tiers, after);
      return mesh.execute(plan, request.kind, request.tiers, send, recv);
    case CollectiveQuant::qwz:
      return qwz_all_gather(mesh, request, plan, send, recv, stats, after);
    case CollectiveQuant::qgz:
    case CollectiveQuant::qgz_fallback:
      return qgz_reduce_scatter(mesh, request, plan, static_cast<const float*>(send),
                                static_cast<float*>(recv), stats, after);
  }
  __builtin_unreachable();
}

}  // namespace tz
