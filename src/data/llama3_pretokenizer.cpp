#include "data/llama3_pretokenizer.hpp"

#include "data/unicode_classes.hpp"

namespace tz {
namespace {

bool is_cr_or_lf(char c) {
  return c == '\r' || c == '\n';
}

// End of the run of class `cls` that starts at i.
std::size_t class_run_end(std::string_view s, std::size_t i, CodePointClass cls) {
  while (i < s.size()) {
    const ClassedUnit u = classed_unit_at(s, i);
    if (u.cls != cls) break;
    i += u.bytes;
  }
  return i;
}

// Bytes of the code point at i if it is `lower` or its upper case (ASCII), else 0; an s also
// matches U+017F (long s, UTF-8 C5 BF), which case-folds to s.
std::size_t letter_any_case(std::string_view s, std::size_t i, char lower) {
  if (i >= s.size()) return 0;
  if (s[i] == lower || s[i] == lower - ('a' - 'A')) return 1;
  if (lower == 's' && s.substr(i, 2) == "\xC5\xBF") return 2;
  return 0;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd, any case) at i, or 0.
std::size_t contraction_any_case(std::string_view s, std::size_t i) {
  if (s[i] != '\'') return 0;
  for (const char one : {'s', 't', 'm', 'd'})
    if (const std::size_t a = letter_any_case(s, i + 1, one)) return 1 + a;
  for (const char* two : {"re", "ve", "ll"})
    if (const std::size_t a = letter_any_case(s, i + 1, two[0]))
      if (const std::size_t b = letter_any_case(s, i + 1 + a, two[1])) return 1 + a + b;
  return 0;
}

}  // namespace

bool Llama3PreTokenizer::next(std::string_view& piece) {
  const std::string_view s = text_;
  const std::size_t i = pos_;
  if (i >= s.size()) return false;
  std::size_t end;
  const ClassedUnit u = classed_unit_at(s, i);
  const std::size_t after = i + u.bytes;  // start of the next code point
  const CodePointClass next_cls = after < s.size() ? classed_unit_at(s, after).cls : CodePointClass::other;
  const bool has_next = after < s.size();
  if (const std::size_t c = contraction_any_case(s, i); c > 0) {
    end = i + c;
  } else if (u.cls == CodePointClass::letter) {
    end = class_run_end(s, i, CodePointClass::letter);
  } else if (u.cls != CodePointClass::number && !is_cr_or_lf(s[i]) && has_next &&
             next_cls == CodePointClass::letter) {
    end = class_run_end(s, after, CodePointClass::letter);  // "[^\r\n\p{L}\p{N}]?\p{L}+"
  } else if (u.cls == CodePointClass::number) {
    end = after;
    for (int k = 1; k < 3 && end < s.size(); ++k) {  // "\p{N}{1,3}"
      const ClassedUnit w = classed_unit_at(s, end);
      if (w.cls != CodePointClass::number) break;
      end += w.bytes;
    }
  } else if (u.cls == CodePointClass::other ||
             (s[i] == ' ' && has_next && next_cls == CodePointClass::other)) {
    end = class_run_end(s, u.cls == CodePointClass::other ? i : after, CodePointClass::other);
    while (end < s.size() && is_cr_or_lf(s[end])) ++end;  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  } else {
    // A white-space run from i: its end, the start of its last code point, and the end of its last CR or LF.
    std::size_t last = i, last_cr_lf_end = 0;
    end = i;
    while (end < s.size()) {
      const ClassedUnit w = classed_unit_at(s, end);
      if (w.cls != CodePointClass::space) break;
      last = end;
      end += w.bytes;
      if (is_cr_or_lf(s[last])) last_cr_lf_end = end;
    }
    if (last_cr_lf_end > 0) {
      end = last_cr_lf_end;  // "\s*[\r\n]+"
    } else if (end < s.size() && last > i) {
      end = last;  // "\s+(?!\S)": leave the last space to the next piece
    }
  }
  piece = s.substr(i, end - i);
  pos_ = end;
  return true;
}

std::vector<std::string_view> llama3_pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  Llama3PreTokenizer p(text);
  std::string_view piece;
  while (p.next(piece)) out.push_back(piece);
  return out;
}

}  // namespace tz
