// Unicode Normalization Form C (canonical composition), as Hugging Face's NFC normalizer applies it
// before pre-tokenization (GPT-NeoX, Pythia): decompose canonically (Hangul syllables
// algorithmically), put each run of combining marks in canonical order (a stable sort by combining
// class), then compose each starter with the following marks it is not blocked from, and Hangul
// L V (T) jamo into syllables. The data (unicode_nfc_table.cpp) is generated from Python's
// unicodedata by scripts/gen_nfc_data.py, and the tests compare with unicodedata.normalize.
// Invalid UTF-8 is kept byte for byte; each invalid byte acts as a starter that composes with
// nothing (as Python does for surrogate-escaped bytes), so normalisation never fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tz {

struct CanonicalDecomposition {
  char32_t code_point, first, second;  // second 0: a singleton
  bool composes;                       // a primary composite: first + second compose back to it
};
extern const CanonicalDecomposition kCanonicalDecompositions[];  // sorted by code_point
extern const std::size_t kCanonicalDecompositionCount;

struct CombiningClassRange {
  char32_t first, last;
  std::uint8_t combining_class;
};
extern const CombiningClassRange kCombiningClassRanges[];  // sorted; not covered: class 0
extern const std::size_t kCombiningClassRangeCount;

std::uint8_t canonical_combining_class(char32_t cp);

// The NFC form of `text` (UTF-8). Text that is all ASCII is returned as it is, without work.
std::string nfc_normalize(std::string_view text);

}  // namespace tz
