#include "data/unicode_nfc.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "data/unicode_classes.hpp"

namespace tz {
namespace {

constexpr char32_t kHangulFirst = 0xAC00, kJamoL = 0x1100, kJamoV = 0x1161, kJamoT = 0x11A7;
constexpr int kJamoVCount = 21, kJamoTCount = 28, kHangulCount = 11172;
// An invalid byte b is carried through as kInvalidByte + b: past every code point, class 0, no mapping.
constexpr char32_t kInvalidByte = 0x110000;

const CanonicalDecomposition* find_decomposition(char32_t cp) {
  const auto* end = kCanonicalDecompositions + kCanonicalDecompositionCount;
  const auto* it =
      std::lower_bound(kCanonicalDecompositions, end, cp,
                       [](const CanonicalDecomposition& d, char32_t c) { return d.code_point < c; });
  return it != end && it->code_point == cp ? it : nullptr;
}

void decompose_into(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kHangulFirst && cp < kHangulFirst + kHangulCount) {
    const int s = static_cast<int>(cp - kHangulFirst);
    out.push_back(kJamoL + s / (kJamoVCount * kJamoTCount));
    out.push_back(kJamoV + (s % (kJamoVCount * kJamoTCount)) / kJamoTCount);
    if (s % kJamoTCount != 0) out.push_back(kJamoT + s % kJamoTCount);
    return;
  }
  const CanonicalDecomposition* d = cp < kInvalidByte ? find_decomposition(cp) : nullptr;
  if (d == nullptr) {
    out.push_back(cp);
    return;
  }
  decompose_into(d->first, out);
  if (d->second != 0) decompose_into(d->second, out);
}

// (first << 21 | second) -> primary composite.
const std::unordered_map<std::uint64_t, char32_t>& composition_pairs() {
  static const std::unordered_map<std::uint64_t, char32_t> pairs = [] {
    std::unordered_map<std::uint64_t, char32_t> m;
    for (std::size_t i = 0; i < kCanonicalDecompositionCount; ++i) {
      const CanonicalDecomposition& d = kCanonicalDecompositions[i];
      if (d.composes) m.emplace(std::uint64_t{d.first} << 21 | d.second, d.code_point);
    }
    return m;
  }();
  return pairs;
}

// The composite of starter a and b, or 0.
char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kJamoL && a < kJamoL + 19 && b >= kJamoV && b < kJamoV + kJamoVCount)
    return kHangulFirst + ((a - kJamoL) * kJamoVCount + (b - kJamoV)) * kJamoTCount;
  if (a >= kHangulFirst && a < kHangulFirst + kHangulCount && (a - kHangulFirst) % kJamoTCount == 0 &&
      b > kJamoT && b < kJamoT + kJamoTCount)
    return a + (b - kJamoT);
  if (a >= kInvalidByte || b >= kInvalidByte) return 0;
  const auto& pairs = composition_pairs();
  const auto it = pairs.find(std::uint64_t{a} << 21 | b);
  return it == pairs.end() ? 0 : it->second;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp >= kInvalidByte) {
    out += static_cast<char>(cp - kInvalidByte);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::uint8_t class_of(char32_t cp) {
  return cp >= kInvalidByte ? 0 : canonical_combining_class(cp);
}

}  // namespace

std::uint8_t canonical_combining_class(char32_t cp) {
  const auto* end = kCombiningClassRanges + kCombiningClassRangeCount;
  const auto* it = std::upper_bound(kCombiningClassRanges, end, cp,
                                    [](char32_t c, const CombiningClassRange& r) { return c < r.first; });
  if (it == kCombiningClassRanges) return 0;
  --it;
  return cp <= it->last ? it->combining_class : 0;
}

std::string nfc_normalize(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(text);
  // Decompose.
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Unit u = decode_utf8_unit(p + i, text.size() - i);
    if (u.valid)
      decompose_into(u.code_point, cps);
    else
      cps.push_back(kInvalidByte + p[i]);
    i += static_cast<std::size_t>(u.bytes);
  }
  // Canonical order: a stable sort of each run of non-starters by class.
  for (std::size_t i = 0; i < cps.size();) {
    if (class_of(cps[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < cps.size() && class_of(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i),
                     cps.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return class_of(a) < class_of(b); });
    i = j;
  }
  // Compose: each code point joins the last starter unless blocked (a mark of class >= its own, or
  // any starter, stands between them).
  std::size_t starter = cps.size();  // none yet
  std::size_t kept = 0;
  int last_class = -1;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const int cls = class_of(cp);
    if (starter < cps.size()) {
      const bool blocked = kept - 1 != starter && (last_class == 0 || last_class >= cls);
      if (!blocked) {
        if (const char32_t c = compose_pair(cps[starter], cp); c != 0) {
          cps[starter] = c;
          continue;
        }
      }
    }
    if (cls == 0) {
      starter = kept;
      last_class = -1;
    } else {
      last_class = cls;
    }
    cps[kept++] = cp;
  }
  cps.resize(kept);
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : cps) append_utf8(cp, out);
  return out;
}

}  // namespace tz
