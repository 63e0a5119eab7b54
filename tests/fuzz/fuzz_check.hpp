// The property every fuzzed reader must have: any input either reads, or throws a tz::InputError
// whose message is one line of bounded length (it quotes excerpts, never the whole input). Any other
// exception is a finding, reported as a crash; so are sanitizer reports, leaks, timeouts and
// allocations over the -rss_limit_mb that scripts/fuzz.sh passes.
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string_view>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"

namespace tz::fuzz {

constexpr std::size_t kMaxMessageBytes = 1024;

[[noreturn]] inline void finding(std::string_view what) {
  fmt::print(stderr, "fuzz finding: {}\n", what);
  std::abort();
}

// Runs read(); true if it returned, false if it threw an InputError with an acceptable message.
template <typename F>
bool reads_or_input_error(F&& read) {
  try {
    read();
    return true;
  } catch (const InputError& e) {
    const std::string_view msg = e.what();
    if (msg.empty()) finding("empty InputError message");
    if (msg.find('\n') != std::string_view::npos)
      finding(fmt::format("InputError message of more than one line: {}", text_excerpt(msg, 400)));
    if (msg.size() > kMaxMessageBytes)
      finding(fmt::format("InputError message of {} bytes: {}", msg.size(), text_excerpt(msg, 400)));
    return false;
  } catch (const std::exception& e) {
    finding(fmt::format("not an InputError: {}", text_excerpt(e.what(), 400)));
  }
}

// A check on a value that did read (a round trip, an invariant).
inline void expect(bool ok, std::string_view what) {
  if (!ok) finding(what);
}

}  // namespace tz::fuzz
