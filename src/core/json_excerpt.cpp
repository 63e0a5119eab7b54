#include "core/json_excerpt.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tz {
namespace {

// Appends at most max_chars characters of `s`, escaped; returns whether it had to cut.
bool append_escaped(std::string& out, std::string_view s, std::size_t max_chars) {
  std::size_t written = 0;
  for (unsigned char c : s) {
    if (written >= max_chars) return true;
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      written += 1;
    } else {
      out += fmt::format("\\x{:02x}", c);
      written += 4;
    }
  }
  return false;
}

std::string quoted(std::string_view s, std::size_t max_chars) {
  std::string out = "\"";
  const bool cut = append_escaped(out, s, max_chars);
  out += cut ? fmt::format("...\" ({} bytes)", s.size()) : "\"";
  return out;
}

// A value without entering it: nested containers are [...] or {...}.
std::string shallow(const nlohmann::json& v, std::size_t max_chars) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      return v.empty() ? "{}" : "{...}";
    case nlohmann::json::value_t::array:
      return v.empty() ? "[]" : "[...]";
    case nlohmann::json::value_t::string:
      return quoted(v.get_ref<const std::string&>(), max_chars);
    case nlohmann::json::value_t::binary:
      return "<binary>";
    default:
      return v.dump();  // null, boolean, number: short by construction
  }
}

}  // namespace

std::string text_excerpt(std::string_view s, std::size_t max_chars) {
  std::string out;
  if (append_escaped(out, s, max_chars)) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

std::string json_excerpt(const nlohmann::json& v, std::size_t max_chars) {
  if (!v.is_structured() || v.empty()) return shallow(v, max_chars);
  const bool is_object = v.is_object();
  std::string out = is_object ? "{" : "[";
  bool cut = false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (out.size() > max_chars) {
      cut = true;
      break;
    }
    if (it != v.begin()) out += ", ";
    if (is_object) out += quoted(it.key(), max_chars / 3) + ": ";
    out += shallow(it.value(), max_chars / 3);
  }
  if (cut) out += ", ...";
  out += is_object ? "}" : "]";
  if (cut)
    out += fmt::format(" (an {} of {} {})", is_object ? "object" : "array", v.size(),
                       is_object ? "keys" : "elements");
  return out;
}

}  // namespace tz
