// The pre-tokenizer patterns tierzero implements, and one object that cuts a text with any of them.
// A byte-level BPE tokenizer names its pattern (bpe_vocabulary.hpp reads it from a tokenizer.json's
// "pre_tokenizer"); each pattern has its own hand-written matcher over the same code-point classes:
//   - gpt2: GPT-2's pattern (gpt2_pretokenizer.hpp), also GPT-NeoX's and Pythia's;
//   - llama3: Llama 3's pattern (llama3_pretokenizer.hpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data/gpt2_pretokenizer.hpp"
#include "data/llama3_pretokenizer.hpp"

namespace tz {

enum class PreTokenizerPattern : std::uint8_t { gpt2, llama3 };

// The pattern exactly as a tokenizer.json writes it (after JSON unescaping).
std::string_view pretokenizer_regex(PreTokenizerPattern pattern);
const char* pretokenizer_name(PreTokenizerPattern pattern);  // "GPT-2", "Llama 3"

class PreTokenizer {
 public:
  PreTokenizer(PreTokenizerPattern pattern, std::string_view text)
      : pattern_(pattern), gpt2_(text), llama3_(text) {}
  // The next piece (a view into the text); false at the end.
  bool next(std::string_view& piece) {
    return pattern_ == PreTokenizerPattern::llama3 ? llama3_.next(piece) : gpt2_.next(piece);
  }

 private:
  PreTokenizerPattern pattern_;
  Gpt2PreTokenizer gpt2_;
  Llama3PreTokenizer llama3_;
};

std::vector<std::string_view> pretokenize(PreTokenizerPattern pattern, std::string_view text);

}  // namespace tz
