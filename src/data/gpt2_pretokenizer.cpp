#include "data/gpt2_pretokenizer.hpp"

#include "data/unicode_classes.hpp"

namespace tz {
namespace {

using Unit = ClassedUnit;

Unit unit_at(std::string_view s, std::size_t i) {
  return classed_unit_at(s, i);
}

// End of the run of class `cls` that starts at i.
std::size_t run_end(std::string_view s, std::size_t i, CodePointClass cls) {
  while (i < s.size()) {
    const Unit u = unit_at(s, i);
    if (u.cls != cls) break;
    i += u.bytes;
  }
  return i;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
std::size_t contraction(std::string_view s, std::size_t i) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  const char a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char b = s[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

bool Gpt2PreTokenizer::next(std::string_view& piece) {
  const std::string_view s = text_;
  const std::size_t i = pos_;
  if (i >= s.size()) return false;
  std::size_t end;
  const Unit u = unit_at(s, i);
  if (const std::size_t c = contraction(s, i); c > 0) {
    end = i + c;
  } else if (u.cls != CodePointClass::space) {
    end = run_end(s, i, u.cls);
  } else if (s[i] == ' ' && i + 1 < s.size() && unit_at(s, i + 1).cls != CodePointClass::space) {
    end = run_end(s, i + 1, unit_at(s, i + 1).cls);  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+"
  } else {
    std::size_t last = i;  // start of the run's last code point
    end = i;
    while (end < s.size()) {
      const Unit w = unit_at(s, end);
      if (w.cls != CodePointClass::space) break;
      last = end;
      end += w.bytes;
    }
    if (end < s.size() && last > i) end = last;  // "\s+(?!\S)": leave the last space to the next piece
  }
  piece = s.substr(i, end - i);
  pos_ = end;
  return true;
}

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  Gpt2PreTokenizer p(text);
  std::string_view piece;
  while (p.next(piece)) out.push_back(piece);
  return out;
}

}  // namespace tz
