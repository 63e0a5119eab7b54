// qgZ (ZeRO++ quantized gradients): hierarchical reduce-scatter as quantized all-to-alls, innermost
// tier first, with the exact result layout of Mesh::reduce_scatter so that the engine switches
// between them with one option.
//
//   Work qgz_reduce_scatter(mesh, tiers, full_grad, shard_out, count, opts)
//
// full_grad: group_size(tiers) * count fp32 values on every rank; shard_out: count fp32 values, the
// sum over the group of block shard_index(tiers) of full_grad. opts.bits is INT4 by default
// (kQgzDefaultOptions). Steps, for the tiers t1 < ... < tk of `tiers` (fan-outs f1..fk): the input
// of step i (the original gradient for i = 1, else the output of step i-1) holds M_i elements; it is
// cut into f_i slices of M_i / f_i, slice j destined for the peer with coordinate j on tier t_i. Each
// slice is quantized separately (block-aligned, the last block padded), the tier group all-to-alls
// the quantized slices, and every rank dequantizes the f_i slices it received and sums them in fp32
// (peer order) into its own slice, the input of step i + 1. Tiers of fan-out 1 move nothing and are
// skipped (no quantization error where nothing travels).
//
// Error bound (derivation in docs/algorithms.md): one quantization of a value in a block of largest
// magnitude m errs by at most m / (2 qmax) (times kQuantHalfStepBudget / 0.5 for fp32 rounding), so
// the result of step i errs by the sum over its f_i inputs of their block bounds plus the errors
// they already carried; qgz_error_bound() in the tests replays that on exact values.
//
// Bytes per rank on tier t_i (recorded under its label): (f_i - 1) * quantized_bytes(M_i / f_i), vs
// (f_i - 1) * 2 * M_i / f_i for the bf16 reduce-scatter: (B/2 + 4) / (2B) for INT4 when B divides
// the slice (0.258 at B = 256).
//
// Fallback: when some step's quantized slice would be no smaller than the fp32 slice itself (tiny
// tensors: slices of fewer than ~B/7 elements), quantization cannot pay; the call then runs the
// unquantized Mesh::reduce_scatter in fp32, says so once per process on stderr, and counts it in
// qgz_fallback_count(). The decision depends only on (count, tiers, topology, opts), so all ranks
// take it alike.
//
// Non-blocking (quant/host_stream.hpp): every step's data is computed from the previous step's
// result, so each step's host work is a task on this thread's gradient host stream and each
// all-to-all is issued now, in the caller's order, behind the task that fills its send buffer:
//   Q1 = quantize f1 slices of the input (after `after`)
//   A1 = all-to-all on tier t1 (stream_wait Q1)
//   Q2 = dequantize + sum A1's slices, quantize f2 slices of the sum (after A1)   ... up to
//   the last task, which writes shard_out: the returned Work.
// The call returns at once; the Work completes when shard_out is written (the fallback returns the
// non-blocking Work of the fp32 reduce-scatter, also started after `after`). `full_grad` and
// `shard_out` must stay untouched until then. Non-finite blocks quantized on this rank are added to
// `*stats` when given, by the time the Work completes; NaN/inf in a gradient reaches the result as NaN.
#pragma once

#include <cstddef>

#include "collective/collective_plan.hpp"
#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "core/quant_format.hpp"

namespace tz {

Work qgz_reduce_scatter(Mesh& mesh, TierSet tiers, const float* full_grad, float* shard_out,
                        std::size_t count, const QuantOptions& opts = kQgzDefaultOptions,
                        QuantStats* stats = nullptr, const Work& after = {});

// The same for a planned request (plan = plan_collective(topology, request), quant qgz or
// qgz_fallback): runs the plan's steps (quant/run_collective.hpp calls this). Whether quantization
// pays is collective/collective_plan.hpp's qgz_quantized_path.
Work qgz_reduce_scatter(Mesh& mesh, const CollectiveRequest& request, const CollectivePlan& plan,
                        const float* full_grad, float* shard_out, QuantStats* stats = nullptr,
                        const Work& after = {});

// Calls of qgz_reduce_scatter in this process that fell back to the unquantized reduce-scatter.
std::size_t qgz_fallback_count();

}  // namespace tz
