// qwZ (ZeRO++ quantized weight communication): all-gather of weight shards as block-quantized codes.
//
//   Work qwz_all_gather(comm, shard, full, count, dtype, opts)            one flat group
//   Work qwz_all_gather(mesh, tiers, shard, full, count, dtype, opts)     hierarchical, outer tier first
//   Work qwz_all_gather(mesh, request, plan, shard, full)                 the planned route
//
// shard: `count` elements of dtype (f32 or bf16) on every rank; full: group_size * count elements,
// rank r's shard at r * count (Mesh: at shard_index(tiers) * count, as Mesh::all_gather lays it out).
// Each rank quantizes its shard once (opts.bits, INT8 by default: kQwzDefaultOptions), the group
// all-gathers the codes and scales as u8, every rank dequantizes every shard back into dtype. Codes
// travel unchanged through all tiers: they are never re-quantized. This rank's own shard also comes
// back dequantized, so every rank holds bitwise the same `full`.
//
// Bytes (algorithmic, recorded by the communicators under each tier's label): the unquantized
// all-gather with quantized_bytes(count, opts) in place of count * dtype_bytes(dtype), i.e. per rank
// on a tier of fan-out f gathering pieces of span shards: (f - 1) * span * quantized_bytes(count).
// Against bf16 that is quantized_bytes(count) / (2 * count) = (B + 4) / (2B) for INT8 when B divides
// count (0.508 at B = 256). docs/algorithms.md, "Quantized collectives".
//
// Non-blocking (quant/host_stream.hpp): the call issues its communicator calls now, in the caller's
// order, and returns at once; quantize and dequantize run as tasks on this thread's weight host
// stream, so the caller computes while its shard is quantized, the codes travel and every piece is
// dequantized. The Work completes when `full` is written. `after`: the shard is read only once it
// has completed (the engine passes the weight refresh that writes the shard), without blocking here.
// `shard` and `full` must stay untouched until the Work completes. Non-finite blocks of this rank's
// shard are added to `*stats` when given, by the time the Work completes (read it after wait()).
#pragma once

#include <cstddef>

#include "collective/collective_plan.hpp"
#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "core/quant_format.hpp"

namespace tz {

Work qwz_all_gather(Communicator& comm, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts = kQwzDefaultOptions, QuantStats* stats = nullptr,
                    const Work& after = {});

Work qwz_all_gather(Mesh& mesh, TierSet tiers, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts = kQwzDefaultOptions, QuantStats* stats = nullptr,
                    const Work& after = {});

// The same for a planned request (plan = plan_collective(topology, request), quant qwz): the codes
// travel the plan's route, hierarchical or flat (quant/run_collective.hpp calls this).
Work qwz_all_gather(Mesh& mesh, const CollectiveRequest& request, const CollectivePlan& plan,
                    const void* shard, void* full, QuantStats* stats = nullptr, const Work& after = {});

}  // namespace tz
