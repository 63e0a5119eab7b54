// Trains a GPT-2 style byte-level BPE vocabulary on text (for users without GPT-2's files, and to
// give tests and benchmarks a realistic vocabulary). The classic algorithm (Sennrich et al. 2016,
// as GPT-2 was trained), over GPT-2's pre-tokens:
//   1. count the distinct pre-tokens of the text; each starts as its bytes;
//   2. repeatedly merge the adjacent pair that occurs most often (counted over pre-tokens with
//      their counts; ties go to the pair of smaller token ids), adding the merged token to the
//      vocabulary, until it has `vocab_size` tokens or no pair occurs twice.
// The base tokens are the 256 bytes in GPT-2's order (bytes_to_unicode), then the merges' tokens,
// then "<|endoftext|>" as a special token. Pair counts are kept incrementally: each merge
// recounts only the pre-tokens that contain the pair.
#pragma once

#include <string_view>
#include <vector>

#include "data/bpe_vocabulary.hpp"

namespace tz {

// InputError if vocab_size < 257 (the bytes and <|endoftext|>) or above 2^24.
BpeVocabulary train_bpe(const std::vector<std::string_view>& texts, int vocab_size);

}  // namespace tz
