// Traffic accounting: every collective records, under the tier label of the group it ran on and
// under its kind, the bytes it moved per rank (algorithmic_bytes, collective/collective_kind.hpp), an
// op count and time (from its start on the communicator's progress thread to its end; collectives
// that overlap each count in full, as a profiler's per-kernel times do). A multi-tier collective is a
// composition of single-communicator ones, so it is recorded step by step under each tier it crosses
// and each step's kind (a qwZ gather as all_gather, qgZ as all_to_all ...). docs/algorithms.md lists
// the steps and bytes of every collective.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "collective/collective_kind.hpp"
#include "collective/collective_plan.hpp"

namespace tz {

struct TierTraffic {
  double bytes = 0;       // algorithmic bytes per rank
  std::uint64_t ops = 0;  // collectives (or collective steps) recorded
  double seconds = 0;     // wall time from start to completion, summed
};

using TrafficByKey = std::map<std::string, TierTraffic>;

// The ledger by tier and by kind at one instant (taken under one lock, so a collective recorded
// meanwhile is in both or in neither, and the two always hold the same total time).
struct TrafficSnapshot {
  TrafficByKey by_tier, by_kind;
};

// Per-process ledger, keyed by tier label ("gcd", "node", "system", "world", ...) and, apart, by
// collective kind ("all_gather", ...). Thread-safe: the progress thread of a communicator records
// while the caller may read.
class TrafficLedger {
 public:
  void record(const std::string& tier, CollectiveKind kind, double bytes, double seconds);
  TrafficByKey snapshot() const;
  TrafficByKey snapshot_by_kind() const;
  TrafficSnapshot snapshot_both() const;
  // Difference between now and an earlier snapshot (e.g. the traffic of one training step).
  TrafficByKey since(const TrafficByKey& earlier) const { return difference(snapshot(), earlier); }
  TrafficByKey since_by_kind(const TrafficByKey& earlier) const {
    return difference(snapshot_by_kind(), earlier);
  }
  static TrafficByKey difference(TrafficByKey now, const TrafficByKey& earlier);
  void reset();

  // Steps run per algorithm, keyed "tier kind algorithm" ("node all_gather shared"): what the plans'
  // TierStep::algorithm said, as it ran, and how many planned shared-memory steps had to run over the
  // transport instead (their ranks could not map a segment).
  void record_algorithm(const std::string& tier, CollectiveKind kind, StepAlgorithm algorithm);
  std::map<std::string, std::uint64_t> algorithms() const;
  void count_shared_memory_fallback();
  std::uint64_t shared_memory_fallbacks() const;

  // A table: tier, bytes, ops, seconds, effective GB/s.
  static std::string format(const std::map<std::string, TierTraffic>& traffic);
  static nlohmann::json to_json(const std::map<std::string, TierTraffic>& traffic);

 private:
  mutable std::mutex mu_;
  TrafficByKey by_tier_;
  TrafficByKey by_kind_;
  std::map<std::string, std::uint64_t> algorithms_;
  std::uint64_t shared_memory_fallbacks_ = 0;
};

}  // namespace tz
