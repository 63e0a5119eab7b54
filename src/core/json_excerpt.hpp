// Short excerpts of JSON values and raw text for error messages. A bad value may be huge (a 25 MB
// string) or deeply nested; a message quotes at most a few dozen characters of it and never walks
// into it: containers are shown one level deep, their nested containers as [...] or {...}.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace tz {

// Characters of a value or text a message quotes before cutting it with "...".
constexpr std::size_t kExcerptChars = 48;

// `s` on one line: control and non-ASCII bytes as \xNN, cut after max_chars with
// "... (N bytes)" so the reader knows how long the whole was.
std::string text_excerpt(std::string_view s, std::size_t max_chars = kExcerptChars);

// A value as written (strings quoted), containers one level deep and cut after max_chars, e.g.
// `[0.9, 0.95, 0.99]`, `{"a": 1, "b": [...]}`, `"xxxxxxxx..." (25000000 bytes)`,
// `[[...], [...], ...] (an array of 7 elements)`.
std::string json_excerpt(const nlohmann::json& v, std::size_t max_chars = kExcerptChars);

}  // namespace tz
