#include "core/bandwidth_text.hpp"

#include <charconv>
#include <cmath>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"

namespace tz {

std::string_view bandwidth_units_help() {
  return "a number in GB/s, or a string with units: B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, "
         "TiB/s (bytes) or kb/s, Mb/s, Gb/s, Tb/s (bits), e.g. \"400Gb/s\" or \"50GB/s\"";
}

double parse_bandwidth_GBps(std::string_view text, std::string_view what) {
  // One unit in GB/s as num / den, so that GB/s and Gb/s figures come out exact.
  struct Unit {
    std::string_view name;
    double num, den;
  };
  static constexpr Unit kUnits[] = {{"B/s", 1, 1e9},
                                    {"kB/s", 1, 1e6},
                                    {"MB/s", 1, 1e3},
                                    {"GB/s", 1, 1},
                                    {"TB/s", 1e3, 1},
                                    {"KiB/s", 1024.0, 1e9},
                                    {"MiB/s", 1048576.0, 1e9},
                                    {"GiB/s", 1073741824.0, 1e9},
                                    {"TiB/s", 1099511627776.0, 1e9},
                                    {"kb/s", 1, 8e6},
                                    {"Mb/s", 1, 8e3},
                                    {"Gb/s", 1, 8},
                                    {"Tb/s", 1e3, 8}};
  auto bad = [&](std::string_view why) -> double {
    fail_input("{}: bandwidth \"{}\" {}; write {}", what, text_excerpt(text), why, bandwidth_units_help());
  };
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec != std::errc() || stop == begin) return bad("does not start with a number");
  if (!std::isfinite(value)) return bad("is not finite");
  std::string_view unit(stop, static_cast<std::size_t>(end - stop));
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  for (const Unit& u : kUnits)
    if (unit == u.name) return value * u.num / u.den;
  return bad(unit.empty() ? "has no unit" : "has an unknown unit");
}

}  // namespace tz
