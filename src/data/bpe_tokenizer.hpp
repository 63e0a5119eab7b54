// A byte-level BPE encoder and decoder (GPT-2, GPT-NeoX, Llama 3) over a BpeVocabulary
// (bpe_vocabulary.hpp).
//
// Encoding a text: cut it into pre-tokens with the vocabulary's pattern (pretokenizer.hpp: GPT-2's
// or Llama 3's); with ignore_merges a pre-token that is a token is that token; otherwise each
// pre-token's bytes start as one symbol per byte (the byte's token); then merges are applied by
// rank: repeatedly take the adjacent pair whose merge has the lowest rank and merge its occurrences
// left to right, until no adjacent pair has a merge. The ids of the final symbols are the tokens.
// Decoding concatenates the tokens' bytes, so decode(encode(x)) == x for every byte string x
// (invalid UTF-8 included).
//
// Two implementations of the merging, tested against each other:
//   - encode_ref: exactly GPT-2's loop (scan all pairs for the lowest rank, merge all its
//     occurrences, repeat): O(n^2) per pre-token;
//   - encode: a cache of recent pre-tokens, and for a miss a heap of candidate pairs keyed by
//     (rank, position) over a linked list of symbols: O(n log n). It pops occurrences of one rank
//     left to right, which is GPT-2's order whenever every merge's parts are bytes or results of
//     earlier merges (true of every trained BPE: a token exists before it is merged again). A
//     vocabulary without that property is encoded with the reference loop
//     (merges_in_training_order() says which).
// Before all that, added tokens that are not special (vocabulary.added: GPT-NeoX's runs of spaces)
// are cut out of the text as Hugging Face's tokenizers does: at each position the longest one that
// matches, leftmost first; each is its own id. Those with "normalized": false are matched in the raw
// text, then each stretch between them is NFC-normalized (vocabulary.nfc) and those with
// "normalized": true are matched in it; the stretches left go through the pre-tokenizer and BPE.
// Special tokens (<|endoftext|>, <|begin_of_text|>) are never produced from text: text that spells
// one is encoded as ordinary text, as GPT-2's encoder and tiktoken's encode_ordinary do (Hugging
// Face's encode with split_special_tokens=True).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/bpe_vocabulary.hpp"

namespace tz {

class BpeTokenizer {
 public:
  // InputError naming vocab.origin if a byte has no token, or a merge's parts or result are missing.
  explicit BpeTokenizer(BpeVocabulary vocab);
  static BpeTokenizer load(const std::string& path) { return BpeTokenizer(read_bpe_vocabulary(path)); }

  std::vector<std::int32_t> encode(std::string_view text);
  void encode(std::string_view text, std::vector<std::int32_t>& out);  // appends
  std::vector<std::int32_t> encode_ref(std::string_view text) const;
  // Encodes in bounded memory: calls sink with the tokens whenever at least `chunk_tokens` are ready,
  // and once more at the end (a text of any size, e.g. a mapped file).
  void encode_chunked(std::string_view text, std::size_t chunk_tokens,
                      const std::function<void(std::span<const std::int32_t>)>& sink);

  // InputError naming the id and its index if an id is not a token.
  std::string decode(std::span<const std::int32_t> ids) const;

  std::int64_t vocab_size() const { return static_cast<std::int64_t>(vocab_.tokens.size()); }  // max id + 1
  std::optional<std::int32_t> end_of_text() const {
    return eot_;
  }  // "<|endoftext|>", if the vocabulary has it
  // The special token written before each document: "<|endoftext|>" (GPT-2, GPT-NeoX, as llm.c's
  // writers do), else "<|begin_of_text|>" (Llama 3, whose post-processor starts every text with it).
  std::optional<std::int32_t> document_separator() const { return eot_ ? eot_ : bot_; }
  PreTokenizerPattern pretokenizer() const { return vocab_.pretokenizer; }
  bool merges_in_training_order() const { return training_order_; }
  const BpeVocabulary& vocabulary() const { return vocab_; }

 private:
  struct Merge {
    std::int32_t rank, result;
  };
  const Merge* find_merge(std::int32_t a, std::int32_t b) const;
  void merge_ref(std::string_view piece, std::vector<std::int32_t>& out) const;
  void merge_heap(std::string_view piece, std::vector<std::int32_t>& out);
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out);
  bool emit_whole_token(std::string_view piece, std::vector<std::int32_t>& out) const;
  // Added tokens by first byte, longest first: (content, id).
  using AddedIndex = std::vector<std::vector<std::pair<std::string, std::int32_t>>>;
  static void split_added(std::string_view text, const AddedIndex& index,
                          const std::function<void(std::string_view)>& on_text,
                          const std::function<void(std::int32_t)>& on_added);
  // Calls on_text with each normalized stretch of ordinary text and on_added with each added token.
  void segment(std::string_view text, const std::function<void(std::string_view)>& on_text,
               const std::function<void(std::int32_t)>& on_added) const;

  BpeVocabulary vocab_;
  std::int32_t byte_token_[256];
  std::unordered_map<std::uint64_t, Merge> merges_;  // (left << 32 | right) -> rank, result
  std::optional<std::int32_t> eot_, bot_;
  bool training_order_ = true;
  AddedIndex raw_added_, normalized_added_;  // empty when there are no added tokens of that kind

  // Cache of pre-token -> tokens; cleared when it reaches kCacheEntries (bounded memory).
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr std::size_t kCacheEntries = 1 << 16;
  static constexpr std::size_t kCachedPieceBytes = 64;
  std::unordered_map<std::string, std::pair<std::uint32_t, std::uint32_t>, StringHash, std::equal_to<>>
      cache_;
  std::vector<std::int32_t> cache_tokens_;
  // Token bytes -> id of the ordinary tokens, kept only for ignore_merges.
  std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> whole_tokens_;
  // Scratch of merge_heap, kept across calls.
  std::vector<std::int32_t> sym_, prev_, next_;
};

}  // namespace tz
