// GPT-2's pre-tokenization: text is cut into pieces before byte-pair merges, by the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// applied left to right, first alternative that matches, greedy. Written out by hand here (no regex
// engine), one code point at a time (unicode_classes.hpp):
//   1. an apostrophe followed by s, t, re, ve, m, ll or d (lower case) is a piece;
//   2. a letter run, a number run, or a run of "other" code points (not letter, number or white
//      space), each optionally preceded by one U+0020 space, is a piece;
//   3. a white-space run that reaches the end of the text is a piece; one followed by a non-space
//      gives up its last code point (so that space can start the next word) unless it is a single
//      code point, which is then a piece of its own.
// Bytes that are not well-formed UTF-8 are units of class "other", one byte each (what the
// reference does with Python's surrogateescape decoding). The pieces concatenate to the text.
// Tested against pieces the Python `regex` module cuts with the same pattern (tests/fixtures).
#pragma once

#include <string_view>
#include <vector>

namespace tz {

class Gpt2PreTokenizer {
 public:
  explicit Gpt2PreTokenizer(std::string_view text) : text_(text) {}
  // The next piece (a view into the text); false at the end.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace tz
