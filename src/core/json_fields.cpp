#include "core/json_fields.hpp"

#include <algorithm>
#include <cmath>

#include "core/json_excerpt.hpp"
#include "core/known_keys.hpp"

namespace tz {
namespace {

std::string integer_range(long long min, long long max) {
  if (min == LLONG_MIN && max == LLONG_MAX) return "an integer";
  if (max == LLONG_MAX) return fmt::format("an integer >= {}", min);
  if (min == LLONG_MIN) return fmt::format("an integer <= {}", max);
  return fmt::format("an integer in [{}, {}]", min, max);
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
  if (!obj_.is_object()) fail_input("{}: expected a JSON object, got {}", where_, json_excerpt(obj_));
}

void JsonFields::allow_only(std::initializer_list<std::string_view> allowed) const {
  for (const auto& [key, value] : obj_.items()) {
    bool known = false;
    for (auto a : allowed) known = known || key == a;
    if (!known) {
      fail_input("{}: unknown key '{}' ({})", where_, text_excerpt(key), known_keys_text(key, allowed));
    }
  }
}

bool JsonFields::has(std::string_view key) const {
  return obj_.contains(key);
}

const nlohmann::json& JsonFields::raw(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end()) fail_input("{}: missing key '{}'", where_, key);
  return *it;
}

void JsonFields::fail(std::string_view key, std::string_view what) const {
  fail_input("{}: key '{}' {}", where_, key, what);
}

std::string JsonFields::str(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_string()) fail(key, fmt::format("must be a string, got {}", json_excerpt(v)));
  return v.get<std::string>();
}
std::string JsonFields::str_or(std::string_view key, std::string fallback) const {
  return has(key) ? str(key) : fallback;
}

std::string JsonFields::identifier(std::string_view key) const {
  std::string s = str(key);
  const bool control = std::any_of(s.begin(), s.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (s.empty() || s.size() > kMaxNameBytes || control)
    fail(key, fmt::format("must be a name of 1 to {} bytes without control characters, got {}", kMaxNameBytes,
                          json_excerpt(raw(key))));
  return s;
}
std::string JsonFields::identifier_or(std::string_view key, std::string fallback) const {
  return has(key) ? identifier(key) : fallback;
}

double JsonFields::number(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_number()) fail(key, fmt::format("must be a number, got {}", json_excerpt(v)));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, fmt::format("must be a finite number, got {}", d));
  return d;
}
double JsonFields::number_or(std::string_view key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

long long JsonFields::integer(std::string_view key, long long min, long long max) const {
  const auto& v = raw(key);
  const auto out_of_range = [&] {
    fail(key, fmt::format("must be {}, got {}", integer_range(min, max), json_excerpt(v)));
  };
  if (!v.is_number_integer()) out_of_range();
  // Unsigned values above LLONG_MAX would wrap to negative numbers in a long long.
  if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(LLONG_MAX))
    out_of_range();
  const long long i = v.get<long long>();
  if (i < min || i > max) out_of_range();
  return i;
}
long long JsonFields::integer_or(std::string_view key, long long fallback, long long min,
                                 long long max) const {
  return has(key) ? integer(key, min, max) : fallback;
}

bool JsonFields::boolean(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_boolean()) fail(key, fmt::format("must be true or false, got {}", json_excerpt(v)));
  return v.get<bool>();
}
bool JsonFields::boolean_or(std::string_view key, bool fallback) const {
  return has(key) ? boolean(key) : fallback;
}

}  // namespace tz
