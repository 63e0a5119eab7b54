// Shared by the quantized-collective tests: the bytes a traffic ledger records on one tier (0 when the
// tier carried nothing).
#pragma once

#include <map>
#include <string>

#include "comm/traffic.hpp"

namespace tz::quant_test {

inline double tier_bytes(const std::map<std::string, TierTraffic>& t, const std::string& label) {
  auto it = t.find(label);
  return it == t.end() ? 0.0 : it->second.bytes;
}

}  // namespace tz::quant_test
