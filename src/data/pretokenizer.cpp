#include "data/pretokenizer.hpp"

namespace tz {

std::string_view pretokenizer_regex(PreTokenizerPattern pattern) {
  switch (pattern) {
    case PreTokenizerPattern::gpt2:
      return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
    case PreTokenizerPattern::llama3:
      return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  return {};
}

const char* pretokenizer_name(PreTokenizerPattern pattern) {
  return pattern == PreTokenizerPattern::llama3 ? "Llama 3" : "GPT-2";
}

std::vector<std::string_view> pretokenize(PreTokenizerPattern pattern, std::string_view text) {
  std::vector<std::string_view> out;
  PreTokenizer p(pattern, text);
  std::string_view piece;
  while (p.next(piece)) out.push_back(piece);
  return out;
}

}  // namespace tz
