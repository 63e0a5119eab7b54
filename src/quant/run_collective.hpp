// The one entry point for every collective a partition plan issues: the caller names the request
// (kind, tiers, count, dtype, and the plan's choices: flat or hierarchical, quantized or not),
// plan_collective (collective/collective_plan.hpp) picks the algorithm, and this runs it:
//   unquantized          the mesh's route (hierarchical, flat, per tier, local)
//   qwz                  quant/qwz_all_gather.hpp: quantize, the codes travel the route, dequantize
//   qgz, qgz_fallback    quant/qgz_reduce_scatter.hpp: per-tier INT4 all-to-all, or fp32 fallback
// The step schedule prices the same plan_collective result, so a step's ledger equals the plan's
// bytes by construction. Adding an algorithm means a route or quantization in collective_plan and
// its executor here.
//
// Every form is non-blocking: the communicator calls are issued now, in the caller's order, and the
// host steps of the quantized ones run on the calling thread's host streams (quant/host_stream.hpp).
// `after`: the collective reads `send` only once that Work has completed (a stream dependency, not a
// wait here; only a plan without steps, a group of one that copies at once, waits for it here).
#pragma once

#include "collective/collective_plan.hpp"
#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "core/quant_format.hpp"

namespace tz {

// Buffers and counts as Mesh takes them for request.kind; qgZ requests take fp32 send and recv.
// Non-finite blocks seen by a quantizer are added to *stats when given, by the time the Work is done.
Work run_collective(Mesh& mesh, const CollectiveRequest& request, const void* send, void* recv,
                    QuantStats* stats = nullptr, const Work& after = {});

}  // namespace tz
