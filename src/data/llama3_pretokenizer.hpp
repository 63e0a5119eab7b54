// Llama 3's pre-tokenization (also tiktoken's cl100k_base): text is cut into pieces before
// byte-pair merges by the pattern
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// applied left to right, first alternative that matches, greedy. Written out by hand (no regex
// engine), one code point at a time, with the classes GPT-2's pre-tokenizer uses
// (unicode_classes.hpp):
//   1. an apostrophe followed by s, t, re, ve, m, ll or d in any case is a piece ("'S", "'Ll";
//      U+017F long s counts as an s, as in the reference's case folding);
//   2. a letter run is a piece, with the one code point before it when that is neither a letter,
//      a number, CR nor LF (so " word", "\tword", "(word" and "'word" are pieces);
//   3. a number run is cut into pieces of three code points from its start ("1234567" -> "123",
//      "456", "7"); numbers never take a space;
//   4. a run of "other" code points (not letter, number or white space), optionally preceded by
//      one U+0020 space, is a piece together with the CR and LF right after it;
//   5. a white-space run that holds CR or LF is a piece up to and including its last CR or LF;
//   6. else a white-space run that reaches the end of the text is a piece; one followed by a
//      non-space gives up its last code point (which then starts the next piece) unless it is a
//      single code point, which is then a piece of its own.
// Bytes that are not well-formed UTF-8 are units of class "other", one byte each. The pieces
// concatenate to the text. Tested against pieces the Python `regex` module cuts with the same
// pattern (tests/fixtures/llama3_pretokenize.json).
#pragma once

#include <string_view>
#include <vector>

namespace tz {

class Llama3PreTokenizer {
 public:
  explicit Llama3PreTokenizer(std::string_view text) : text_(text) {}
  // The next piece (a view into the text); false at the end.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::vector<std::string_view> llama3_pretokenize(std::string_view text);

}  // namespace tz
