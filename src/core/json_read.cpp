// Strict JSON parsing through the JSON library's SAX interface: the library's parser is iterative
// (no recursion however deep the input), and this builder makes the tree itself, so it can refuse a
// duplicate key, a nesting deeper than kMaxJsonDepth or an out-of-range number the moment it sees
// one, with the path of the value ("optimizer.params.lr", "tiers[2].fanout") in the message.
#include "core/json_read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"

namespace tz {
namespace {

using json = nlohmann::json;

// One open array or object: the container and, for an object, the key of the value being read.
struct Frame {
  json* value;
  std::string key;
};

class StrictBuilder {
 public:
  explicit StrictBuilder(std::string_view text) : text_(text) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool b) { return put(json(b)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(json(v)); }
  bool string(json::string_t& s) { return put(json(std::move(s))); }
  bool binary(json::binary_t&) {  // only binary formats (CBOR, ...) have these
    error_ = "binary values are not JSON";
    return false;
  }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      top.key = k;
      error_ = fmt::format("duplicate key '{}' (each key may appear once in an object)", path());
      return false;
    }
    top.key = k;
    pending_ = &(*top.value)[k];
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token, const json::exception& ex) {
    const auto [line, column] = line_column(position);
    if (ex.id == 406) {  // number overflow: the lexer read a number that is not a finite double
      error_ = fmt::format("{}number {} is out of range (line {}, column {})", at_key(),
                           text_excerpt(last_token, 32), line, column);
      return false;
    }
    std::string reason = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ...; last read: '...'":
    // keep the reason, drop the library's prefix and its unbounded quote of the last token.
    if (auto p = reason.find(": ");
        reason.starts_with("[json.exception.parse_error") && p != std::string::npos)
      reason = reason.substr(p + 2);
    if (auto p = reason.find("; last read:"); p != std::string::npos) reason.resize(p);
    if (text_.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      error_ = "is empty (expected a JSON value)";
      return false;
    }
    // The end of the last token is what sits next to the error.
    const std::string_view tail =
        std::string_view(last_token).substr(last_token.size() - std::min<std::size_t>(last_token.size(), 32));
    error_ = fmt::format("invalid JSON at line {}, column {}{}: {}; last read: '{}{}'", line, column,
                         stack_.empty() ? "" : fmt::format(" (near {})", path_or_root()),
                         text_excerpt(reason, 160), tail.size() < last_token.size() ? "..." : "",
                         text_excerpt(tail, 32));
    return false;
  }

  json& result() { return root_; }
  const std::string& error() const { return error_; }

 private:
  bool put(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    json& parent = *stack_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
    } else {
      *pending_ = std::move(v);
    }
    return true;
  }

  // The new container is the last value put; it stays put until it closes, so its address is stable
  // (the parent gets no other element meanwhile).
  bool open(json&& container) {
    if (stack_.size() >= kMaxJsonDepth) {
      error_ =
          fmt::format("arrays/objects nested deeper than {} levels (at {})", kMaxJsonDepth, path_or_root());
      return false;
    }
    json* slot = &root_;
    if (!stack_.empty()) {
      json& parent = *stack_.back().value;
      slot = parent.is_array() ? &parent.emplace_back() : pending_;
    }
    *slot = std::move(container);
    stack_.push_back({slot, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  // The path of the value being read: key 'a.b[2].c'.
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const json& c = *stack_[i].value;
      if (c.is_object()) {
        if (!p.empty()) p += '.';
        p += text_excerpt(stack_[i].key, 32);
      } else {
        // An open child is already the last element; a scalar being read is the next one.
        const std::size_t index = i + 1 < stack_.size() ? c.size() - 1 : c.size();
        p += fmt::format("[{}]", index);
      }
      if (p.size() > 64) return p.substr(0, 64) + "...";
    }
    return p;
  }
  std::string path_or_root() const {
    std::string p = path();
    return p.empty() ? "the top-level value" : fmt::format("'{}'", p);
  }
  std::string at_key() const {
    std::string p = path();
    return p.empty() ? "" : fmt::format("key '{}': ", p);
  }

  // 1-based line and column of the character at `position` (the count of characters read).
  std::pair<std::size_t, std::size_t> line_column(std::size_t position) const {
    const std::size_t end = std::min(position > 0 ? position - 1 : 0, text_.size());
    const std::string_view before = text_.substr(0, end);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t nl = before.rfind('\n');
    const std::size_t column = nl == std::string_view::npos ? end + 1 : end - nl;
    return {line, column};
  }

  std::string_view text_;
  json root_;
  std::vector<Frame> stack_;
  json* pending_ = nullptr;  // the object slot the next value goes into
  std::string error_;
};

}  // namespace

json parse_json_strict(std::string_view text, std::string_view origin) {
  StrictBuilder builder(text);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) fail_input("{}: {}", origin, builder.error());
  return std::move(builder.result());
}

json read_json_file(const std::string& path, std::string_view kind) {
  namespace fs = std::filesystem;
  const std::string origin = kind.empty() ? path : fmt::format("{} {}", kind, path);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) fail_input("{}: no such file", origin);
  if (ec) fail_input("{}: cannot read: {}", origin, ec.message());
  if (st.type() == fs::file_type::directory) fail_input("{}: is a directory, expected a JSON file", origin);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input("{}: cannot open: {}", origin, std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxJsonFileBytes)
      fail_input("{}: larger than {} MiB, not a configuration file", origin, kMaxJsonFileBytes >> 20);
  }
  if (in.bad()) fail_input("{}: read error: {}", origin, std::strerror(errno));
  return parse_json_strict(text, origin);
}

}  // namespace tz
