// A topology is an ordered list of tiers, innermost first (docs/topology.md). Tier t has a fan-out:
// how many units of tier t-1 (or ranks, for t = 0) one unit of tier t holds. A rank is a mixed-radix
// number whose digit t is its coordinate in tier t, innermost digit fastest:
//   rank = c0 + f0 * (c1 + f1 * (c2 + ...)).
// The tier-t group of a rank is the set of ranks that differ from it only in coordinate t; a group for
// a set of tiers S differs only in the coordinates of S. The domain up to tier t is the group for the
// tiers 0..t (Frontier: the domain up to "node" is the 8 GCDs of one node).
//
// Units: bandwidth_GBps is GB/s (1e9 bytes per second) that one rank achieves in a collective confined
// to that tier; latency_us is the per-message latency of one algorithm step on that tier;
// reduce_GBps (optional, 0 = not known: reductions priced free) is the rate at which a rank adds a
// received block into its partial sum during a reduce-scatter on that tier, GB of block per second
// (a calibrated figure: perf/calibration.hpp fits it from bench comm's reduce-scatter rows).
// cpu_call_us and cpu_GBps (optional, 0 = not known) are the host CPU one rank spends on one
// collective call on that tier (its copies, sums and polling, on every thread of the rank):
// cpu_call_us + x / cpu_GBps for a call in which the rank sends x bytes (calibrated from bench comm's
// CPU time per call). The cost model charges them to compute when the ranks compute on the cores
// that run their collectives (CostOptions::host_cores).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topology/collective_curve.hpp"

namespace tz {

struct Tier {
  std::string name;
  int fanout = 1;
  double bandwidth_GBps = 0;
  double latency_us = 0;
  double reduce_GBps = 0;  // optional; 0 = not known
  double cpu_call_us = 0;  // optional; host CPU per collective call, 0 = not known
  double cpu_GBps = 0;     // optional; bytes sent per second of host CPU, 0 = not known
  std::string source;      // where the figures come from
};

// The device every rank drives; used by the cost model. Zeros where a preset does not say.
struct DeviceSpec {
  std::string name;
  double peak_tflops = 0;  // dense bf16 peak per rank
  double memory_gib = 0;   // memory per rank
  double memory_bandwidth_GBps = 0;
  // Optional: GB/s of memory traffic (bytes read + written) the block-quantization kernels sustain
  // (calibrated from bench quant); 0 = memory_bandwidth_GBps x the cost model's kernel efficiency.
  double quant_GBps = 0;
  std::string source;
};

// A set of tiers as a bit mask: bit t = tier t.
using TierSet = std::uint32_t;
constexpr TierSet tier_bit(int t) {
  return TierSet{1} << t;
}
constexpr TierSet tiers_up_to(int t) {
  return (TierSet{1} << (t + 1)) - 1;
}

class Topology {
 public:
  // Parses a topology document (see docs/topology.md). `origin` names the file or preset in errors.
  // An outermost fan-out of "auto" is resolved later by resolve().
  static Topology from_json(const nlohmann::json& doc, std::string_view origin);
  // A preset name (`frontier`, `dgx-h100`, `flat`, `frontier-mini`, ...) or a path to a JSON file.
  static Topology load(std::string_view preset_or_path);
  static std::vector<std::string> preset_names();

  // Fixes an "auto" outermost fan-out so that the world has `world_size` ranks, and checks that the
  // fan-outs multiply to `world_size` (an InputError naming the tiers and sizes otherwise).
  Topology resolve(int world_size) const;
  // Same, given the number of units of the outermost tier (e.g. nodes).
  Topology resolve_outer(int outer_fanout) const;
  bool resolved() const { return !auto_outer_; }

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  int num_tiers() const { return static_cast<int>(tiers_.size()); }
  const Tier& tier(int t) const;
  const std::vector<Tier>& tiers() const { return tiers_; }
  // Index of a tier by name; InputError naming the name and the known tiers if absent.
  int tier_index(std::string_view name) const;
  // The tier whose domain is one host (node); -1 if the topology says none (e.g. `flat`).
  int host_tier() const { return host_tier_; }
  const DeviceSpec& device() const { return device_; }
  // Measured busbw curves (topology/collective_curve.hpp), in file order; empty when none are given.
  const std::vector<CollectiveCurve>& curves() const { return curves_; }
  // The curve measured on exactly the tier set `tiers` for collective `op` by `library`; nullptr if none.
  const CollectiveCurve* find_curve(TierSet tiers, std::string_view op, std::string_view library) const;

  int world_size() const;
  std::vector<int> coords(int rank) const;
  int rank_of(const std::vector<int>& coords) const;

  // Size of the group for `tiers` (product of their fan-outs).
  int group_size(TierSet tiers) const;
  // Members of rank's group for `tiers`, ordered by group rank (mixed radix over the tiers in S).
  std::vector<int> group_ranks(int rank, TierSet tiers) const;
  int group_rank(int rank, TierSet tiers) const;
  // Identifies the group (same value for all members, distinct across groups): for comm split().
  int group_color(int rank, TierSet tiers) const;
  // Human-readable name of a tier set: "gcd+node", "world" for all tiers, "self" for none.
  std::string tier_set_name(TierSet tiers) const;

  // Checks the host tier against the hostnames the ranks really run on (index = world rank). Two
  // ranks the topology puts on one node must share a hostname and vice versa; the first violation is
  // an InputError naming both ranks and hosts, unless `emulate` allows a mismatch on one machine.
  void check_hosts(const std::vector<std::string>& hostnames, bool emulate) const;

  nlohmann::json to_json() const;

 private:
  std::string name_;
  std::string description_;
  std::vector<Tier> tiers_;
  int host_tier_ = -1;
  bool auto_outer_ = false;
  DeviceSpec device_;
  std::vector<CollectiveCurve> curves_;
};

}  // namespace tz
