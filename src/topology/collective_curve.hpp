// Measured collective curves: bus bandwidth against message size and group size for one collective
// on one group of tiers, as nccl-tests reports it, carried by a topology (docs/topology.md) and used by
// the cost model in place of the alpha-beta form (docs/cost_model.md).
//
// Terms (nccl-tests convention, the same as the traffic ledger's): size S = the full tensor (all-gather:
// the gathered output; reduce-scatter: the unreduced input; all-reduce: the buffer; all-to-all: one
// rank's whole send buffer), p = ranks in the group, time t, algbw = S / t,
//   busbw = algbw x (p-1)/p        (all-gather, reduce-scatter, all-to-all)
//   busbw = algbw x 2(p-1)/p       (all-reduce),
// so busbw compares with a link's bandwidth and t = factor x S / busbw.
//
// Interpolation (curve_busbw_GBps), for a table of rows (one per measured group size, ascending) over
// one list of sizes (ascending):
//   within a row   log busbw is linear in log S between measured sizes; below the smallest size the
//                  time continues the alpha-beta line t = a + S/B through the two smallest sizes (its
//                  latency a clamped to [0, t(S_1)]; a row of one size holds its time); above the
//                  largest size the busbw is held (the bandwidth bound);
//   across rows    at a constant per-rank block b = S/p: row q is read at S_q = b q, and log busbw is
//                  linear in log p between the two rows around p; outside the measured group sizes the
//                  nearest row is read at b q. A ring's step moves one block per rank over links whose
//                  load does not depend on the ring's length, so its step time is a function of b
//                  (measured on Frontier: RCCL's multi-node busbw is within about 20% of a function of
//                  b alone from 2 to 128 nodes); reading rows at the same b carries that law to group
//                  sizes between and beyond the measured ones.
// The interpolant is exact at every table point and monotone between neighbouring table points.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

using TierSet = std::uint32_t;
class Topology;

struct CurveRow {
  int group_size = 0;
  std::vector<double> busbw_GBps;  // one per CollectiveCurve::sizes_bytes
};

struct CollectiveCurve {
  TierSet tiers = 0;                // the group the measurement ran on (bit t = tier t)
  std::string op;                   // all_gather, reduce_scatter, all_reduce, all_to_all
  std::string library;              // who ran it: rccl, nccl, tierzero, mpi, ...
  std::string dtype;                // element type of the measurement (informational)
  std::string source;               // where the figures come from (required)
  std::vector<double> sizes_bytes;  // ascending
  std::vector<CurveRow> rows;       // ascending group sizes
};

// The collective names a curve may carry (collective_name of the collective layer).
const std::vector<std::string_view>& curve_op_names();

// Parses `collective_curves[i]` of a topology document whose tier names are `tier_names` (innermost
// first). Every key must be known; errors are one line naming `where`, the key and the value.
CollectiveCurve parse_collective_curve(const nlohmann::json& doc, const std::string& where,
                                       const std::vector<std::string>& tier_names);
nlohmann::json collective_curve_to_json(const CollectiveCurve& curve,
                                        const std::vector<std::string>& tier_names);

// busbw (GB/s) the curve gives for a collective of `size_bytes` over `group_size` ranks (see the top
// of this file). `group_size` >= 2, `size_bytes` > 0.
double curve_busbw_GBps(const CollectiveCurve& curve, int group_size, double size_bytes);
// The plain reference of the same interpolation (a direct transcription of the rules above, one
// table point at a time), for tests.
double curve_busbw_GBps_ref(const CollectiveCurve& curve, int group_size, double size_bytes);

}  // namespace tz
