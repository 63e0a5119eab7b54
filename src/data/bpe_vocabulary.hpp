// The data of a GPT-2 style byte-level BPE tokenizer, and the files it comes in:
//   - vocab.json: {"token": id, ...}, each token written in GPT-2's byte-to-unicode alphabet (every
//     byte one printable code point: 33..126, 161..172, 174..255 as themselves, the other 68 bytes as
//     U+0100..U+0143 in order; so a space is "Ġ");
//   - merges.txt: an optional "#version" line, then one merge per line, "left right" in that
//     alphabet, in rank order (the first line is merged first);
//   - or a Hugging Face tokenizer.json holding the same (model.type "BPE", model.vocab,
//     model.merges as "left right" strings or [left, right] pairs, model.ignore_merges,
//     added_tokens) with the pre-tokenizer of GPT-2 or Llama 3 and no normalizer or NFC
//     (tokenizer_json_pipeline.hpp); settings that change the computation in a way tierzero does
//     not implement (another normalizer, pre-tokenizer or pattern, add_prefix_space, byte_fallback,
//     subword prefixes or suffixes, dropout, added tokens with lstrip, rstrip or single_word) are
//     errors naming the key.
// Every byte must have a token (so any text encodes), every merge's parts and result must be tokens.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/pretokenizer.hpp"

namespace tz {

struct BpeVocabulary {
  std::vector<std::string> tokens;                            // id -> token bytes ("" for an unused id)
  std::vector<std::pair<std::int32_t, std::int32_t>> merges;  // rank -> (left id, right id)
  std::vector<std::int32_t> special;                          // added tokens (never produced by merges)
  std::string origin;                                         // file(s), for messages
  PreTokenizerPattern pretokenizer = PreTokenizerPattern::gpt2;
  // A pre-token that is itself a token is that token, merges or not (Llama 3's model.ignore_merges,
  // tiktoken's rule).
  bool ignore_merges = false;
  bool nfc = false;  // NFC-normalize the text before pre-tokenization (a "normalizer" of type NFC)
  // Added tokens that are not special ("special": false, GPT-NeoX's runs of spaces): cut out of the
  // text before BPE, each its own id; `normalized` ones are matched in the normalized text.
  struct AddedText {
    std::int32_t id;
    std::string content;
    bool normalized;
  };
  std::vector<AddedText> added;
};

// The GPT-2 byte-to-unicode alphabet: byte -> code point, and its inverse (-1: not in the alphabet).
char32_t byte_to_unicode(unsigned char b);
int unicode_to_byte(char32_t cp);
// A token's bytes written in that alphabet (UTF-8), and back (InputError naming `where` on a code
// point outside the alphabet or malformed UTF-8).
std::string bytes_to_alphabet(const std::string& bytes);
std::string alphabet_to_bytes(const std::string& text, const std::string& where);

// Reads DIR/tokenizer.json if it exists, else DIR/vocab.json and DIR/merges.txt; `path` may also
// name a tokenizer.json file. InputError naming the file, key or line on anything malformed.
BpeVocabulary read_bpe_vocabulary(const std::string& path);
BpeVocabulary read_vocab_and_merges(const std::string& vocab_json, const std::string& merges_txt);
BpeVocabulary read_hf_tokenizer_json(const std::string& path);

// Writes DIR/vocab.json and DIR/merges.txt (creating DIR); every write checked.
void write_vocab_and_merges(const BpeVocabulary& vocab, const std::string& dir);

}  // namespace tz
