#include "core/json_fields.hpp"

#include <fstream>
#include <sstream>

namespace tz {

JsonFields::JsonFields(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
  if (!obj_.is_object()) fail_input("{}: expected a JSON object, got {}", where_, obj_.dump());
}

void JsonFields::allow_only(std::initializer_list<std::string_view> allowed) const {
  for (const auto& [key, value] : obj_.items()) {
    bool known = false;
    for (auto a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail_input("{}: unknown key '{}' (known: {})", where_, key, list);
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
  if (!v.is_string()) fail(key, fmt::format("must be a string, got {}", v.dump()));
  return v.get<std::string>();
}
std::string JsonFields::str_or(std::string_view key, std::string fallback) const {
  return has(key) ? str(key) : fallback;
}

double JsonFields::number(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_number()) fail(key, fmt::format("must be a number, got {}", v.dump()));
  return v.get<double>();
}
double JsonFields::number_or(std::string_view key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

long long JsonFields::integer(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_number_integer()) fail(key, fmt::format("must be an integer, got {}", v.dump()));
  return v.get<long long>();
}
long long JsonFields::integer_or(std::string_view key, long long fallback) const {
  return has(key) ? integer(key) : fallback;
}

bool JsonFields::boolean(std::string_view key) const {
  const auto& v = raw(key);
  if (!v.is_boolean()) fail(key, fmt::format("must be true or false, got {}", v.dump()));
  return v.get<bool>();
}
bool JsonFields::boolean_or(std::string_view key, bool fallback) const {
  return has(key) ? boolean(key) : fallback;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input("{}: cannot open file", path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    fail_input("{}: invalid JSON: {}", path, e.what());
  }
}

}  // namespace tz
