// Strict reading of JSON objects for configuration files: every key must be known, every value of
// the expected type; errors are one line naming the origin (file or preset), the key and the value.
#pragma once

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace tz {

class JsonFields {
 public:
  // `where` is the location for messages, e.g. "topology frontier.json: tiers[1]".
  JsonFields(const nlohmann::json& obj, std::string where);

  // Rejects any key not in `allowed` with "<where>: unknown key 'k' (known: a, b, c)".
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const;
  const nlohmann::json& raw(std::string_view key) const;  // InputError if missing

  std::string str(std::string_view key) const;
  std::string str_or(std::string_view key, std::string fallback) const;
  double number(std::string_view key) const;
  double number_or(std::string_view key, double fallback) const;
  long long integer(std::string_view key) const;
  long long integer_or(std::string_view key, long long fallback) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  const std::string& where() const { return where_; }
  // "<where>: key 'k' ..." prefix for callers' own checks.
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;

 private:
  const nlohmann::json& obj_;
  std::string where_;
};

// Reads and parses a JSON file; InputError naming the file on a missing file or a syntax error.
nlohmann::json read_json_file(const std::string& path);

}  // namespace tz
