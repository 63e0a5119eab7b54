#include "data/unicode_classes.hpp"

#include <algorithm>
#include <array>

namespace tz {
namespace {

std::array<CodePointClass, 128> ascii_classes() {
  std::array<CodePointClass, 128> t{};
  for (char32_t c = 0; c < 128; ++c) t[c] = code_point_class_ref(c);
  return t;
}

}  // namespace

CodePointClass code_point_class_ref(char32_t cp) {
  for (std::size_t i = 0; i < kCodePointRangeCount; ++i)
    if (cp >= kCodePointRanges[i].first && cp <= kCodePointRanges[i].last) return kCodePointRanges[i].cls;
  return CodePointClass::other;
}

CodePointClass code_point_class(char32_t cp) {
  static const std::array<CodePointClass, 128> ascii = ascii_classes();
  if (cp < 128) return ascii[cp];
  const CodePointRange* end = kCodePointRanges + kCodePointRangeCount;
  const CodePointRange* r = std::upper_bound(kCodePointRanges, end, cp,
                                             [](char32_t c, const CodePointRange& x) { return c < x.first; });
  if (r == kCodePointRanges) return CodePointClass::other;
  --r;
  return cp <= r->last ? r->cls : CodePointClass::other;
}

Utf8Unit decode_utf8_unit(const unsigned char* p, std::size_t n) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return {b0, 1, true};
  constexpr Utf8Unit invalid{0xFFFD, 1, false};
  int len;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return invalid;  // continuation byte, C0, C1, F5..FF
  }
  if (n < static_cast<std::size_t>(len)) return invalid;
  for (int i = 1; i < len; ++i) {
    const unsigned char b = p[i];
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return invalid;
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, len, true};
}

ClassedUnit classed_unit_at(std::string_view s, std::size_t i) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  if (p[0] < 0x80) return {code_point_class(p[0]), 1};
  const Utf8Unit u = decode_utf8_unit(p, s.size() - i);
  return {u.valid ? code_point_class(u.code_point) : CodePointClass::other, u.bytes};
}

}  // namespace tz
