// The code-point classes GPT-2's pre-tokenizer pattern distinguishes: letters (\p{L}), numbers
// (\p{N}), white space (\s: the Unicode White_Space property, as the Python `regex` module that
// GPT-2's encoder uses defines it) and everything else. The table (unicode_classes_table.cpp) is
// generated from that `regex` module by scripts/gen_gpt2_pretokenizer_data.py, so the classes are
// the reference's own; it is self-contained (no ICU at run time).
// Also the UTF-8 decoding the pre-tokenizer needs: well-formed sequences only (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); any other byte is one "invalid" unit of
// class other, as Python's surrogateescape decoding makes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tz {

enum class CodePointClass : std::uint8_t { other, letter, number, space };

struct CodePointRange {
  char32_t first, last;
  CodePointClass cls;
};
extern const CodePointRange kCodePointRanges[];  // sorted, disjoint; code points not covered: other
extern const std::size_t kCodePointRangeCount;

CodePointClass code_point_class(char32_t cp);      // ASCII table, then binary search
CodePointClass code_point_class_ref(char32_t cp);  // linear scan of the ranges

struct Utf8Unit {
  char32_t code_point;  // U+FFFD stand-in when !valid (its class is taken as other)
  int bytes;            // 1..4; 1 for an invalid byte
  bool valid;
};
// Decodes the unit starting at p (n > 0 bytes available).
Utf8Unit decode_utf8_unit(const unsigned char* p, std::size_t n);

// The class and length of the unit at byte i of s (i < s.size()); an invalid byte is other.
struct ClassedUnit {
  CodePointClass cls;
  int bytes;
};
ClassedUnit classed_unit_at(std::string_view s, std::size_t i);

}  // namespace tz
