// qwZ (ZeRO++ quantized weight communication): all-gather of weight shards as block-quantized codes.
//
//   Work qwz_all_gather(comm, shard, full, count, dtype, opts)            one flat group
//   Work qwz_all_gather(mesh, tiers, shard, full, count, dtype, opts)     hierarchical, outer tier first
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
// Blocking: the call returns a completed Work once `full` is written (the dequantization needs the
// gathered codes, and the communicator offers no host continuation to run it on). Non-finite blocks
// of this rank's shard are counted into `*stats` when given; they arrive as NaN blocks everywhere.
#pragma once

#include <cstddef>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "quant/quant_format.hpp"

namespace tz {

Work qwz_all_gather(Communicator& comm, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts = kQwzDefaultOptions, QuantStats* stats = nullptr);

Work qwz_all_gather(Mesh& mesh, TierSet tiers, const void* shard, void* full, std::size_t count, DType dtype,
                    const QuantOptions& opts = kQwzDefaultOptions, QuantStats* stats = nullptr);

}  // namespace tz
