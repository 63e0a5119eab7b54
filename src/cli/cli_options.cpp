#include "cli/cli_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tz::cli {
namespace {

std::vector<OptionRule>& rules() {
  static std::vector<OptionRule> list;
  return list;
}

// A value as messages quote it: at most 40 bytes, no control characters.
std::string excerpt(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (text.size() > 40) out += "...";
  return out.empty() ? "\"\"" : out;
}

[[noreturn]] void bad(const std::string& name, const std::string& text, const std::string& what) {
  throw CLI::ValidationError(fmt::format("{} {}: {}", name, excerpt(text), what));
}

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

std::string first_name(const std::string& names) {
  std::string first = names.substr(0, names.find(','));
  return first;
}

}  // namespace

const std::vector<OptionRule>& option_rules() {
  return rules();
}

void clear_option_rules() {
  rules().clear();
}

long long parse_integer(const std::string& name, const std::string& text, long long min, long long max) {
  const std::string range = fmt::format("must be an integer in [{}, {}]", min, max);
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty()) bad(name, text, range);
  if (ec == std::errc::result_out_of_range) bad(name, text, "is out of range: " + range);
  if (ec != std::errc() || ptr != end) bad(name, text, range);
  if (v < min || v > max) bad(name, text, range);
  return v;
}

std::uint64_t parse_unsigned(const std::string& name, const std::string& text, std::uint64_t max) {
  const std::string range = fmt::format("must be an integer in [0, {}]", max);
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text[0] == '-' || text[0] == '+') bad(name, text, range);
  if (ec == std::errc::result_out_of_range) bad(name, text, "is out of range: " + range);
  if (ec != std::errc() || ptr != end || v > max) bad(name, text, range);
  return v;
}

double parse_real(const std::string& name, const std::string& text, double min, double max,
                  bool min_exclusive) {
  const std::string range = fmt::format("must be a finite number in {}{}, {}]", min_exclusive ? "(" : "[",
                                        number_text(min), number_text(max));
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) bad(name, text, range);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) bad(name, text, range);
  if (!std::isfinite(v) || errno == ERANGE) bad(name, text, range);
  if (v > max || v < min || (min_exclusive && v == min)) bad(name, text, range);
  return v;
}

std::uint64_t parse_size_bytes(const std::string& name, const std::string& text, std::uint64_t min,
                               std::uint64_t max) {
  const std::string range = fmt::format(
      "must be a size in bytes in [{}, {}] (digits with an optional K, M, "
      "G or T suffix: 4096, 64K, 64M, 2G)",
      size_text(min), size_text(max));
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) bad(name, text, range);
  std::string suffix = text.substr(digits);
  if (suffix.size() == 3 && suffix.substr(1) == "iB") suffix = suffix.substr(0, 1);
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (suffix == "T" || suffix == "t")
    shift = 40;
  else if (!suffix.empty())
    bad(name, text, range);
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, v);
  if (ec != std::errc() || (shift > 0 && v > (std::numeric_limits<std::uint64_t>::max() >> shift)))
    bad(name, text, "is out of range: " + range);
  v <<= shift;
  if (v < min || v > max) bad(name, text, range);
  return v;
}

std::string size_text(std::uint64_t bytes) {
  static const char* suffixes[] = {"", "K", "M", "G", "T"};
  int s = 0;
  while (s < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++s;
  }
  return fmt::format("{}{}", bytes, suffixes[s]);
}

OptionSet::OptionSet(CLI::App& app, std::string command) : app_(app), command_(std::move(command)) {}

OptionRule& OptionSet::rule(const std::string& names, OptionRule r) {
  r.command = command_;
  r.name = first_name(names);
  rules().push_back(std::move(r));
  return rules().back();
}

CLI::Option* OptionSet::single(const std::string& names, const std::string& help, OptionRule r,
                               const std::string& type, const std::string& shown, ValueParser parse) {
  const std::string name = rule(names, std::move(r)).name;
  return app_
      .add_option_function<std::string>(
          names, [name, parse = std::move(parse)](const std::string& s) { parse(name, s); }, help)
      ->type_name(type)
      ->default_str(shown);
}

CLI::Option* OptionSet::several(const std::string& names, const std::string& help, OptionRule r,
                                const std::string& type, const std::string& shown,
                                std::function<void()> clear, ValueParser parse_each) {
  r.list = true;
  const std::string name = rule(names, std::move(r)).name;
  return app_
      .add_option_function<std::vector<std::string>>(
          names,
          [name, clear = std::move(clear),
           parse = std::move(parse_each)](const std::vector<std::string>& values) {
            clear();
            for (const auto& s : values) parse(name, s);
          },
          help)
      ->type_name(type + " ...")
      ->delimiter(',')
      ->default_str(shown);
}

namespace {

OptionRule range_rule(OptionKind kind, double min, double max, bool min_exclusive = false) {
  OptionRule r;
  r.kind = kind;
  r.min = min;
  r.max = max;
  r.min_exclusive = min_exclusive;
  return r;
}

// Accepts `s` when it is one of `words`; otherwise reports it against them.
void check_word(const std::string& name, const std::string& s, const std::vector<std::string>& words) {
  for (const auto& w : words)
    if (s == w) return;
  bad(name, s, fmt::format("must be one of {}", fmt::join(words, ", ")));
}

void check_text(const std::string& name, const std::string& s) {
  if (s.empty()) bad(name, s, "must not be empty");
}

}  // namespace

template <typename T>
CLI::Option* OptionSet::scalar_integer(const std::string& names, T& target, long long min, long long max,
                                       const std::string& help, const std::string& default_text) {
  return single(names, help, range_rule(OptionKind::integer, double(min), double(max)), "INT",
                default_text.empty() ? std::to_string(target) : default_text,
                [&target, min, max](const std::string& name, const std::string& s) {
                  target = static_cast<T>(parse_integer(name, s, min, max));
                });
}

template <typename T>
CLI::Option* OptionSet::list_integer(const std::string& names, std::vector<T>& target, long long min,
                                     long long max, const std::string& help,
                                     const std::string& default_text) {
  std::string shown = default_text;
  if (shown.empty())
    for (T v : target) shown += (shown.empty() ? "" : " ") + std::to_string(v);
  return several(
      names, help, range_rule(OptionKind::integer, double(min), double(max)), "INT", shown,
      [&target] { target.clear(); },
      [&target, min, max](const std::string& name, const std::string& s) {
        target.push_back(static_cast<T>(parse_integer(name, s, min, max)));
      });
}

CLI::Option* OptionSet::integer(const std::string& names, int& target, long long min, long long max,
                                const std::string& help, const std::string& default_text) {
  return scalar_integer(names, target, min, max, help, default_text);
}

CLI::Option* OptionSet::integer(const std::string& names, long long& target, long long min, long long max,
                                const std::string& help, const std::string& default_text) {
  return scalar_integer(names, target, min, max, help, default_text);
}

CLI::Option* OptionSet::integer(const std::string& names, std::size_t& target, long long min, long long max,
                                const std::string& help, const std::string& default_text) {
  return scalar_integer(names, target, min, max, help, default_text);
}

CLI::Option* OptionSet::integer(const std::string& names, std::optional<int>& target, long long min,
                                long long max, const std::string& help, const std::string& default_text) {
  return single(names, help, range_rule(OptionKind::integer, double(min), double(max)), "INT", default_text,
                [&target, min, max](const std::string& name, const std::string& s) {
                  target = int(parse_integer(name, s, min, max));
                });
}

CLI::Option* OptionSet::integer(const std::string& names, std::vector<int>& target, long long min,
                                long long max, const std::string& help, const std::string& default_text) {
  return list_integer(names, target, min, max, help, default_text);
}

CLI::Option* OptionSet::integer(const std::string& names, std::vector<std::size_t>& target, long long min,
                                long long max, const std::string& help, const std::string& default_text) {
  return list_integer(names, target, min, max, help, default_text);
}

CLI::Option* OptionSet::unsigned_integer(const std::string& names, std::optional<std::uint64_t>& target,
                                         std::uint64_t max, const std::string& help,
                                         const std::string& default_text) {
  return single(names, help, range_rule(OptionKind::integer, 0, double(max)), "INT", default_text,
                [&target, max](const std::string& name, const std::string& s) {
                  target = parse_unsigned(name, s, max);
                });
}

CLI::Option* OptionSet::unsigned_integer(const std::string& names, std::uint64_t& target, std::uint64_t max,
                                         const std::string& help, const std::string& default_text) {
  return single(names, help, range_rule(OptionKind::integer, 0, double(max)), "INT", default_text,
                [&target, max](const std::string& name, const std::string& s) {
                  target = parse_unsigned(name, s, max);
                });
}

CLI::Option* OptionSet::integer(const std::string& names, std::function<void(long long)> set, long long min,
                                long long max, const std::string& help, const std::string& default_text) {
  return single(names, help, range_rule(OptionKind::integer, double(min), double(max)), "INT", default_text,
                [set = std::move(set), min, max](const std::string& name, const std::string& s) {
                  set(parse_integer(name, s, min, max));
                });
}

CLI::Option* OptionSet::real(const std::string& names, std::function<void(double)> set, double min,
                             double max, const std::string& help, const std::string& default_text,
                             bool min_exclusive) {
  return single(
      names, help, range_rule(OptionKind::real, min, max, min_exclusive), "NUM", default_text,
      [set = std::move(set), min, max, min_exclusive](const std::string& name, const std::string& s) {
        set(parse_real(name, s, min, max, min_exclusive));
      });
}

CLI::Option* OptionSet::real(const std::string& names, double& target, double min, double max,
                             const std::string& help, const std::string& default_text, bool min_exclusive) {
  return single(names, help, range_rule(OptionKind::real, min, max, min_exclusive), "NUM",
                default_text.empty() ? fmt::format("{}", target) : default_text,
                [&target, min, max, min_exclusive](const std::string& name, const std::string& s) {
                  target = parse_real(name, s, min, max, min_exclusive);
                });
}

CLI::Option* OptionSet::real(const std::string& names, std::optional<double>& target, double min, double max,
                             const std::string& help, const std::string& default_text, bool min_exclusive) {
  return single(names, help, range_rule(OptionKind::real, min, max, min_exclusive), "NUM", default_text,
                [&target, min, max, min_exclusive](const std::string& name, const std::string& s) {
                  target = parse_real(name, s, min, max, min_exclusive);
                });
}

CLI::Option* OptionSet::real(const std::string& names, std::vector<double>& target, double min, double max,
                             const std::string& help, const std::string& default_text, bool min_exclusive) {
  return several(
      names, help, range_rule(OptionKind::real, min, max, min_exclusive), "NUM", default_text,
      [&target] { target.clear(); },
      [&target, min, max, min_exclusive](const std::string& name, const std::string& s) {
        target.push_back(parse_real(name, s, min, max, min_exclusive));
      });
}

CLI::Option* OptionSet::real_or_word(const std::string& names, std::string& target, double min, double max,
                                     std::vector<std::string> words, const std::string& help,
                                     bool min_exclusive) {
  OptionRule r = range_rule(OptionKind::real, min, max, min_exclusive);
  r.choices = words;
  return single(names, help, std::move(r), "NUM|WORD", target,
                [&target, min, max, min_exclusive, words](const std::string& name, const std::string& s) {
                  for (const auto& w : words)
                    if (s == w) {
                      target = s;
                      return;
                    }
                  try {
                    parse_real(name, s, min, max, min_exclusive);
                  } catch (const CLI::ValidationError&) {
                    bad(name, s,
                        fmt::format("must be {} or a finite number in {}{}, {}]", fmt::join(words, ", "),
                                    min_exclusive ? "(" : "[", number_text(min), number_text(max)));
                  }
                  target = s;
                });
}

CLI::Option* OptionSet::size_bytes(const std::string& names, std::size_t& target, std::uint64_t min,
                                   std::uint64_t max, const std::string& help) {
  return single(names, help, range_rule(OptionKind::size_bytes, double(min), double(max)), "SIZE",
                size_text(target), [&target, min, max](const std::string& name, const std::string& s) {
                  target = parse_size_bytes(name, s, min, max);
                });
}

CLI::Option* OptionSet::choice(const std::string& names, std::string& target,
                               std::vector<std::string> choices, const std::string& help,
                               const std::string& default_text) {
  OptionRule r;
  r.kind = OptionKind::choice;
  r.choices = choices;
  return single(names, help, std::move(r), fmt::format("{{{}}}", fmt::join(choices, ",")),
                default_text.empty() ? target : default_text,
                [&target, choices](const std::string& name, const std::string& s) {
                  check_word(name, s, choices);
                  target = s;
                });
}

CLI::Option* OptionSet::choice(const std::string& names, std::vector<std::string>& target,
                               std::vector<std::string> choices, const std::string& help,
                               const std::string& default_text) {
  OptionRule r;
  r.kind = OptionKind::choice;
  r.choices = choices;
  return several(
      names, help, std::move(r), "WORD",
      default_text.empty() ? fmt::format("{}", fmt::join(target, ",")) : default_text,
      [&target] { target.clear(); },
      [&target, choices](const std::string& name, const std::string& s) {
        check_word(name, s, choices);
        target.push_back(s);
      });
}

CLI::Option* OptionSet::text(const std::string& names, std::string& target, const std::string& help,
                             const std::string& default_text) {
  OptionRule r;
  r.kind = OptionKind::text;
  return single(names, help, std::move(r), "TEXT", default_text.empty() ? target : default_text,
                [&target](const std::string& name, const std::string& s) {
                  check_text(name, s);
                  target = s;
                });
}

CLI::Option* OptionSet::text(const std::string& names, std::vector<std::string>& target,
                             const std::string& help, const std::string& default_text) {
  OptionRule r;
  r.kind = OptionKind::text;
  CLI::Option* o = several(
      names, help, std::move(r), "TEXT", default_text, [&target] { target.clear(); },
      [&target](const std::string& name, const std::string& s) {
        check_text(name, s);
        target.push_back(s);
      });
  return o->delimiter('\0');  // a path or a prompt may hold commas
}

CLI::Option* OptionSet::flag(const std::string& names, bool& target, const std::string& help) {
  OptionRule r;
  r.kind = OptionKind::flag;
  rule(names, std::move(r));
  return app_.add_flag(names, target, help);
}

CLI::Option* OptionSet::flag(const std::string& names, std::function<void()> on, const std::string& help) {
  OptionRule r;
  r.kind = OptionKind::flag;
  rule(names, std::move(r));
  return app_.add_flag_callback(names, std::move(on), help);
}

}  // namespace tz::cli
