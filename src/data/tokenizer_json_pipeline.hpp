// The sections of a Hugging Face tokenizer.json around its model: "normalizer", "pre_tokenizer" and
// "decoder". tierzero implements byte-level BPE with no normalization or NFC (unicode_nfc.hpp), one
// of two pre-tokenizer patterns (pretokenizer.hpp) and the byte-level decoder, and accepts exactly
// the files that ask for that; anything else is an InputError naming the key and the value found,
// never a silent fallback.
//   - "normalizer": null (or absent), or {"type": "NFC"} (GPT-NeoX, Pythia);
//   - "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}: GPT-2's
//     pattern (GPT-2, GPT-NeoX, Pythia); or {"type": "Sequence", "pretokenizers": [Split, ByteLevel]}
//     with a Split {"pattern": {"Regex": P}, "behavior": "Isolated", "invert": false} where P is
//     Llama 3's pattern or GPT-2's, written exactly, and a ByteLevel with "add_prefix_space": false,
//     "use_regex": false (Llama 3);
//   - "decoder": null or {"type": "ByteLevel", ...} (tokens' bytes concatenated).
// "post_processor" is not read: tierzero's encoder adds no tokens (as encode(add_special_tokens=
// False)); `tierzero tokenize` writes the document separator itself.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "data/pretokenizer.hpp"

namespace tz {

struct TokenizerJsonPipeline {
  PreTokenizerPattern pretokenizer = PreTokenizerPattern::gpt2;
  bool nfc = false;  // the text is NFC-normalized before pre-tokenization
};

// Checks the sections of `doc` (a parsed tokenizer.json); `where` names the file in messages.
TokenizerJsonPipeline read_tokenizer_json_pipeline(const nlohmann::json& doc, const std::string& where);

}  // namespace tz
