// Strict reading of JSON objects for configuration files: every key must be known, every value of
// the expected type and range; errors are one line naming the origin (file or preset), the key and a
// short excerpt of the value (core/json_excerpt.hpp). Files are parsed by core/json_read.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <climits>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/json_read.hpp"

namespace tz {

constexpr std::size_t kMaxNameBytes = 64;

class JsonFields {
 public:
  // `where` is the location for messages, e.g. "topology frontier.json: tiers[1]".
  JsonFields(const nlohmann::json& obj, std::string where);

  // Rejects any key not in `allowed` with "<where>: unknown key 'k' (known: a, b, c)" (a long list
  // is cut to the nearest keys: core/known_keys.hpp).
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const;
  const nlohmann::json& raw(std::string_view key) const;  // InputError if missing

  std::string str(std::string_view key) const;
  std::string str_or(std::string_view key, std::string fallback) const;
  // A name that messages and tables print (a tier, topology or plan name): 1 to kMaxNameBytes bytes,
  // no control characters.
  std::string identifier(std::string_view key) const;
  std::string identifier_or(std::string_view key, std::string fallback) const;
  // A finite number (integers are converted).
  double number(std::string_view key) const;
  double number_or(std::string_view key, double fallback) const;
  // An integer in [min, max]. A float, or an integer outside the range (including one that does not
  // fit in 64 bits), is "<where>: key 'k' must be an integer in [min, max], got v": never wrapped.
  long long integer(std::string_view key, long long min = LLONG_MIN, long long max = LLONG_MAX) const;
  long long integer_or(std::string_view key, long long fallback, long long min = LLONG_MIN,
                       long long max = LLONG_MAX) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  const std::string& where() const { return where_; }
  // "<where>: key 'k' ..." prefix for callers' own checks.
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;

 private:
  const nlohmann::json& obj_;
  std::string where_;
};

}  // namespace tz
