#include "data/bpe_trainer.hpp"

#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "data/bpe_pair_key.hpp"
#include "data/gpt2_pretokenizer.hpp"

namespace tz {
namespace {

struct Word {
  std::vector<std::int32_t> symbols;
  std::int64_t count = 0;
};

}  // namespace

BpeVocabulary train_bpe(const std::vector<std::string_view>& texts, int vocab_size) {
  if (vocab_size < 257 || vocab_size > (1 << 24))
    fail_input("--train-vocab {}: must be in [257, 2^24] (256 byte tokens and <|endoftext|> at least)",
               vocab_size);
  BpeVocabulary vocab;
  vocab.origin = "trained";
  std::int32_t byte_id[256];
  {  // GPT-2's order: the printable bytes first, then the rest
    std::vector<int> order;
    for (int b = 0; b < 256; ++b)
      if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) order.push_back(b);
    for (int b = 0; b < 256; ++b)
      if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) order.push_back(b);
    for (int id = 0; id < 256; ++id) {
      byte_id[order[id]] = id;
      vocab.tokens.emplace_back(1, static_cast<char>(order[id]));
    }
  }
  std::unordered_map<std::string_view, std::int64_t> piece_counts;
  for (std::string_view text : texts) {
    Gpt2PreTokenizer pre(text);
    std::string_view piece;
    while (pre.next(piece)) ++piece_counts[piece];
  }
  std::vector<Word> words;
  words.reserve(piece_counts.size());
  for (const auto& [piece, count] : piece_counts) {
    Word w;
    for (unsigned char c : piece) w.symbols.push_back(byte_id[c]);
    w.count = count;
    words.push_back(std::move(w));
  }
  std::unordered_map<std::uint64_t, std::int64_t> pair_count;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> where;  // pair -> words (may repeat)
  auto add_pairs = [&](std::uint32_t wi, std::int64_t sign) {
    const Word& w = words[wi];
    for (std::size_t i = 0; i + 1 < w.symbols.size(); ++i) {
      const std::uint64_t k = bpe_pair_key(w.symbols[i], w.symbols[i + 1]);
      pair_count[k] += sign * w.count;
      if (sign > 0) where[k].push_back(wi);
    }
  };
  for (std::uint32_t wi = 0; wi < words.size(); ++wi) add_pairs(wi, +1);
  std::vector<std::uint32_t> stamp(words.size(), 0);
  const int merges_wanted = vocab_size - 257;
  for (int m = 0; m < merges_wanted; ++m) {
    std::uint64_t best = 0;
    std::int64_t best_count = 1;  // a pair must occur at least twice
    for (auto it = pair_count.begin(); it != pair_count.end();) {
      if (it->second <= 0) {
        it = pair_count.erase(it);
        continue;
      }
      if (it->second > best_count || (it->second == best_count && best_count > 1 && it->first < best))
        best = it->first, best_count = it->second;
      ++it;
    }
    if (best_count < 2) break;
    const auto a = static_cast<std::int32_t>(best >> 32), b = static_cast<std::int32_t>(best & 0xffffffffu);
    const auto id = static_cast<std::int32_t>(vocab.tokens.size());
    vocab.tokens.push_back(vocab.tokens[a] + vocab.tokens[b]);
    vocab.merges.emplace_back(a, b);
    std::vector<std::uint32_t> list = std::move(where[best]);
    where.erase(best);
    for (std::uint32_t wi : list) {
      if (stamp[wi] == static_cast<std::uint32_t>(m + 1)) continue;  // listed twice
      stamp[wi] = static_cast<std::uint32_t>(m + 1);
      Word& w = words[wi];
      bool has = false;
      for (std::size_t i = 0; i + 1 < w.symbols.size() && !has; ++i)
        has = w.symbols[i] == a && w.symbols[i + 1] == b;
      if (!has) continue;
      add_pairs(wi, -1);
      std::vector<std::int32_t> merged;
      for (std::size_t i = 0; i < w.symbols.size();) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == a && w.symbols[i + 1] == b) {
          merged.push_back(id);
          i += 2;
        } else {
          merged.push_back(w.symbols[i++]);
        }
      }
      w.symbols.swap(merged);
      add_pairs(wi, +1);
    }
  }
  vocab.special.push_back(static_cast<std::int32_t>(vocab.tokens.size()));
  vocab.tokens.emplace_back("<|endoftext|>");
  return vocab;
}

}  // namespace tz
