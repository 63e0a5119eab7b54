// Traffic ledger (traffic.hpp): algorithmic bytes per rank, op counts and time, per tier label and
// per collective kind.
#include "comm/traffic.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tz {

void TrafficLedger::record(const std::string& tier, CollectiveKind kind, double bytes, double seconds) {
  std::lock_guard lock(mu_);
  for (TierTraffic* t : {&by_tier_[tier], &by_kind_[std::string(collective_name(kind))]}) {
    t->bytes += bytes;
    t->ops += 1;
    t->seconds += seconds;
  }
}

TrafficByKey TrafficLedger::snapshot() const {
  std::lock_guard lock(mu_);
  return by_tier_;
}

TrafficByKey TrafficLedger::snapshot_by_kind() const {
  std::lock_guard lock(mu_);
  return by_kind_;
}

TrafficSnapshot TrafficLedger::snapshot_both() const {
  std::lock_guard lock(mu_);
  return {by_tier_, by_kind_};
}

TrafficByKey TrafficLedger::difference(TrafficByKey now, const TrafficByKey& earlier) {
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
  by_kind_.clear();
  algorithms_.clear();
  shared_memory_fallbacks_ = 0;
}

void TrafficLedger::record_algorithm(const std::string& tier, CollectiveKind kind, StepAlgorithm algorithm) {
  const std::string key = step_algorithm_key(tier, kind, algorithm);
  std::lock_guard lock(mu_);
  ++algorithms_[key];
}

std::map<std::string, std::uint64_t> TrafficLedger::algorithms() const {
  std::lock_guard lock(mu_);
  return algorithms_;
}

void TrafficLedger::count_shared_memory_fallback() {
  std::lock_guard lock(mu_);
  ++shared_memory_fallbacks_;
}

std::uint64_t TrafficLedger::shared_memory_fallbacks() const {
  std::lock_guard lock(mu_);
  return shared_memory_fallbacks_;
}

std::string TrafficLedger::format(const std::map<std::string, TierTraffic>& traffic) {
  std::string out =
      fmt::format("{:<16} {:>16} {:>8} {:>12} {:>10}\n", "tier", "bytes", "ops", "seconds", "GB/s");
  for (const auto& [tier, t] : traffic) {
    const double GBps = t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0;
    out += fmt::format("{:<16} {:>16.0f} {:>8} {:>12.6f} {:>10.3f}\n", tier, t.bytes, t.ops, t.seconds, GBps);
  }
  return out;
}

nlohmann::json TrafficLedger::to_json(const std::map<std::string, TierTraffic>& traffic) {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [tier, t] : traffic)
    doc[tier] = {{"bytes", t.bytes},
                 {"ops", t.ops},
                 {"seconds", t.seconds},
                 {"GBps", t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0.0}};
  return doc;
}

}  // namespace tz
