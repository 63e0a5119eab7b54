// Strict reading of JSON text and files: the one place every configuration file (training config,
// model config, topology, plan) is parsed. Stricter than the JSON library's default:
//  - a key given twice in one object is an error naming the key (the library keeps the last value);
//  - nesting deeper than kMaxJsonDepth arrays/objects is an error (never a stack overflow later, in
//    code that walks the value);
//  - a number out of the range of a double (1e400) is an error naming the key;
//  - syntax errors name the origin, line and column, and quote at most a short excerpt of the text;
//  - a file that is missing, a directory, unreadable or larger than kMaxJsonFileBytes says so.
// Every error is one line, an InputError starting with the origin ("config run.json: ...").
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace tz {

constexpr std::size_t kMaxJsonDepth = 128;              // nested arrays/objects
constexpr std::size_t kMaxJsonFileBytes = 64ull << 20;  // configuration files are kilobytes

// Parses `text`; `origin` starts every message, e.g. "topology preset frontier".
nlohmann::json parse_json_strict(std::string_view text, std::string_view origin);

// Reads and parses the file at `path`; messages start with "<kind> <path>: " ("config run.json: ..."),
// or "<path>: " when kind is empty.
nlohmann::json read_json_file(const std::string& path, std::string_view kind = "");

}  // namespace tz
