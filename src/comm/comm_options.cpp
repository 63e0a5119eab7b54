// Checking and parsing communicator options (comm_options.hpp).
#include "comm/comm_options.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace tz {
namespace {

template <typename T>
bool parse_whole(std::string_view s, T& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

DelayInjection parse_delay_injection(std::string_view text, std::string_view option) {
  if (text == "off") return {};
  const std::size_t colon = text.find(':');
  DelayInjection d;
  std::uint64_t max_us = 0;
  if (colon == std::string_view::npos || !parse_whole(text.substr(0, colon), d.seed) ||
      !parse_whole(text.substr(colon + 1), max_us) || max_us > kMaxInjectedDelayUs)
    fail_input("{} '{}': expected SEED:MAX_US (unsigned integers, MAX_US at most {}) or 'off'", option,
               text.substr(0, 64), kMaxInjectedDelayUs);
  d.max_us = static_cast<std::uint32_t>(max_us);
  return d;
}

namespace {
constexpr std::string_view kSharedAllToAllNames[] = {"auto", "pair-rings", "rounds", "in-place"};
}  // namespace

std::string_view shared_all_to_all_name(SharedAllToAll a) {
  const auto i = static_cast<std::size_t>(a);
  return i < std::size(kSharedAllToAllNames) ? kSharedAllToAllNames[i] : "?";
}

SharedAllToAll parse_shared_all_to_all(std::string_view text, std::string_view option) {
  for (std::size_t i = 0; i < std::size(kSharedAllToAllNames); ++i)
    if (text == kSharedAllToAllNames[i]) return static_cast<SharedAllToAll>(i);
  fail_input("{} '{}': expected auto, pair-rings, rounds or in-place", option, text.substr(0, 64));
}

void validate_comm_options(const CommOptions& o) {
  if (!std::isfinite(o.timeout_s) || o.timeout_s <= 0 || o.timeout_s > 1e9)
    fail_input("communication option timeout_s = {}: must be a finite number of seconds in (0, 1e9]",
               o.timeout_s);
  if (o.chunk_bytes == 0) fail_input("communication option chunk_bytes = 0: must be at least 1");
  if (o.shared_slot_bytes == 0 || o.shared_slot_bytes > (std::size_t{1} << 30))
    fail_input("communication option shared_slot_bytes = {}: must be in [1, 1073741824]",
               o.shared_slot_bytes);
  if (static_cast<std::size_t>(o.shared_all_to_all) >= std::size(kSharedAllToAllNames))
    fail_input("communication option shared_all_to_all = {}: not one of auto, pair-rings, rounds, in-place",
               static_cast<int>(o.shared_all_to_all));
  if (o.ranks_on_host < 0 || o.ranks_on_host > (1 << 20))
    fail_input("communication option ranks_on_host = {}: must be in [0, 1048576] (0: not known)",
               o.ranks_on_host);
  if (o.delay_injection.max_us > kMaxInjectedDelayUs)
    fail_input("communication option delay_injection.max_us = {}: must be at most {}",
               o.delay_injection.max_us, kMaxInjectedDelayUs);
}

}  // namespace tz
