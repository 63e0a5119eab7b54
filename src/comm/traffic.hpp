// Traffic accounting: every collective records, under the tier label of the group it ran on, the
// bytes it moved per rank (algorithmic convention, as nccl-tests counts it), an op count and time.
//   all-gather, reduce-scatter: (p-1)/p x payload    (payload = the full, gathered / unreduced tensor)
//   all-reduce:                 2(p-1)/p x payload
//   all-to-all:                 (p-1)/p x payload    (payload = this rank's whole send buffer)
//   broadcast:                  payload              (0 if p == 1)
//   barrier:                    0
// A multi-tier collective is a composition of single-tier ones, so it is recorded step by step under
// each tier it crosses. docs/algorithms.md lists the steps and bytes of every collective.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tz {

enum class CollectiveKind : std::uint8_t {
  all_gather,
  reduce_scatter,
  all_reduce,
  all_to_all,
  broadcast,
  barrier
};
std::string_view collective_name(CollectiveKind kind);

// Bytes per rank one collective of `payload_bytes` moves on a group of p ranks (formulas above).
double algorithmic_bytes(CollectiveKind kind, double payload_bytes, int p);

struct TierTraffic {
  double bytes = 0;       // algorithmic bytes per rank
  std::uint64_t ops = 0;  // collectives (or collective steps) recorded
  double seconds = 0;     // wall time from start to completion, summed
};

// Per-process ledger, keyed by tier label ("gcd", "node", "system", "world", ...). Thread-safe: the
// progress thread of a communicator records while the caller may read.
class TrafficLedger {
 public:
  void record(const std::string& tier, double bytes, double seconds);
  std::map<std::string, TierTraffic> snapshot() const;
  // Difference between now and an earlier snapshot (e.g. the traffic of one training step).
  std::map<std::string, TierTraffic> since(const std::map<std::string, TierTraffic>& earlier) const;
  void reset();

  // A table: tier, bytes, ops, seconds, effective GB/s.
  static std::string format(const std::map<std::string, TierTraffic>& traffic);
  static nlohmann::json to_json(const std::map<std::string, TierTraffic>& traffic);

 private:
  mutable std::mutex mu_;
  std::map<std::string, TierTraffic> by_tier_;
};

}  // namespace tz
