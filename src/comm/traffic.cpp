// Traffic ledger (traffic.hpp): algorithmic bytes per rank, op counts and time, per tier label.
#include "comm/traffic.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tz {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_to_all:
      return "all_to_all";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::barrier:
      return "barrier";
  }
  return "?";
}

double algorithmic_bytes(CollectiveKind kind, double payload_bytes, int p) {
  if (p <= 1) return 0;
  const double share = double(p - 1) / p;
  switch (kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return share * payload_bytes;
    case CollectiveKind::all_reduce:
      return 2 * share * payload_bytes;
    case CollectiveKind::broadcast:
      return payload_bytes;
    case CollectiveKind::barrier:
      return 0;
  }
  return 0;
}

void TrafficLedger::record(const std::string& tier, double bytes, double seconds) {
  std::lock_guard lock(mu_);
  TierTraffic& t = by_tier_[tier];
  t.bytes += bytes;
  t.ops += 1;
  t.seconds += seconds;
}

std::map<std::string, TierTraffic> TrafficLedger::snapshot() const {
  std::lock_guard lock(mu_);
  return by_tier_;
}

std::map<std::string, TierTraffic> TrafficLedger::since(
    const std::map<std::string, TierTraffic>& earlier) const {
  std::map<std::string, TierTraffic> now = snapshot();
  for (auto& [tier, t] : now) {
    auto it = earlier.find(tier);
    if (it == earlier.end()) continue;
    t.bytes -= it->second.bytes;
    t.ops -= it->second.ops;
    t.seconds -= it->second.seconds;
  }
  return now;
}

void TrafficLedger::reset() {
  std::lock_guard lock(mu_);
  by_tier_.clear();
}

std::string TrafficLedger::format(const std::map<std::string, TierTraffic>& traffic) {
  std::string out =
      fmt::format("{:<16} {:>16} {:>8} {:>12} {:>10}\n", "tier", "bytes", "ops", "seconds", "GB/s");
  for (const auto& [tier, t] : traffic) {
    const double gbps = t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0;
    out += fmt::format("{:<16} {:>16.0f} {:>8} {:>12.6f} {:>10.3f}\n", tier, t.bytes, t.ops, t.seconds, gbps);
  }
  return out;
}

nlohmann::json TrafficLedger::to_json(const std::map<std::string, TierTraffic>& traffic) {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [tier, t] : traffic)
    doc[tier] = {{"bytes", t.bytes},
                 {"ops", t.ops},
                 {"seconds", t.seconds},
                 {"gbps", t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0.0}};
  return doc;
}

}  // namespace tz
