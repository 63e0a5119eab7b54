#include "data/bpe_tokenizer.hpp"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "core/error.hpp"
#include "data/bpe_pair_key.hpp"
#include "data/pretokenizer.hpp"
#include "data/unicode_nfc.hpp"

namespace tz {

BpeTokenizer::BpeTokenizer(BpeVocabulary vocab) : vocab_(std::move(vocab)) {
  const std::string& where = vocab_.origin;
  std::unordered_set<std::int32_t> special(vocab_.special.begin(), vocab_.special.end());
  std::unordered_map<std::string, std::int32_t> ids;
  for (std::size_t id = 0; id < vocab_.tokens.size(); ++id)
    if (!vocab_.tokens[id].empty() && !special.count(static_cast<std::int32_t>(id)))
      ids.emplace(vocab_.tokens[id], static_cast<std::int32_t>(id));
  for (int b = 0; b < 256; ++b) {
    auto it = ids.find(std::string(1, static_cast<char>(b)));
    if (it == ids.end())
      fail_input("tokenizer {}: byte 0x{:02x} has no token, so not every text can be encoded", where, b);
    byte_token_[b] = it->second;
  }
  for (auto id : vocab_.special) {
    if (vocab_.tokens[id] == "<|endoftext|>") eot_ = id;
    if (vocab_.tokens[id] == "<|begin_of_text|>") bot_ = id;
  }
  std::vector<bool> formed(vocab_.tokens.size(), false);  // a byte token, or the result of an earlier merge
  for (int b = 0; b < 256; ++b) formed[byte_token_[b]] = true;
  for (std::size_t r = 0; r < vocab_.merges.size(); ++r) {
    const auto [a, b] = vocab_.merges[r];
    const auto size = static_cast<std::int32_t>(vocab_.tokens.size());
    if (a < 0 || b < 0 || a >= size || b >= size || vocab_.tokens[a].empty() || vocab_.tokens[b].empty())
      fail_input("tokenizer {}: merge {} has ids ({}, {}) outside the vocabulary of {}", where, r, a, b,
                 size);
    auto it = ids.find(vocab_.tokens[a] + vocab_.tokens[b]);
    if (it == ids.end())
      fail_input("tokenizer {}: merge {} ('{}' + '{}') makes a token that is not in the vocabulary", where, r,
                 bytes_to_alphabet(vocab_.tokens[a]), bytes_to_alphabet(vocab_.tokens[b]));
    if (!merges_.emplace(bpe_pair_key(a, b), Merge{static_cast<std::int32_t>(r), it->second}).second)
      fail_input("tokenizer {}: merge {} ('{}' + '{}') is listed twice", where, r,
                 bytes_to_alphabet(vocab_.tokens[a]), bytes_to_alphabet(vocab_.tokens[b]));
    training_order_ = training_order_ && formed[a] && formed[b];
    formed[it->second] = true;
  }
  if (vocab_.ignore_merges) whole_tokens_.insert(ids.begin(), ids.end());
  for (const auto& a : vocab_.added) {
    AddedIndex& index = a.normalized ? normalized_added_ : raw_added_;
    const std::string content = a.normalized && vocab_.nfc ? nfc_normalize(a.content) : a.content;
    if (content.empty()) fail_input("tokenizer {}: added token {} is empty", where, a.id);
    index.resize(256);
    index[static_cast<unsigned char>(content[0])].emplace_back(content, a.id);
  }
  for (AddedIndex* index : {&raw_added_, &normalized_added_})
    for (auto& list : *index)
      std::stable_sort(list.begin(), list.end(),
                       [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
}

void BpeTokenizer::split_added(std::string_view text, const AddedIndex& index,
                               const std::function<void(std::string_view)>& on_text,
                               const std::function<void(std::int32_t)>& on_added) {
  if (index.empty()) {
    if (!text.empty()) on_text(text);
    return;
  }
  std::size_t start = 0;  // of the ordinary text not yet passed on
  for (std::size_t i = 0; i < text.size();) {
    const std::pair<std::string, std::int32_t>* hit = nullptr;
    for (const auto& candidate : index[static_cast<unsigned char>(text[i])])
      if (text.substr(i).starts_with(candidate.first)) {
        hit = &candidate;  // the longest: the list is longest first
        break;
      }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > start) on_text(text.substr(start, i - start));
    on_added(hit->second);
    i += hit->first.size();
    start = i;
  }
  if (start < text.size()) on_text(text.substr(start));
}

void BpeTokenizer::segment(std::string_view text, const std::function<void(std::string_view)>& on_text,
                           const std::function<void(std::int32_t)>& on_added) const {
  if (raw_added_.empty() && normalized_added_.empty() && !vocab_.nfc) {  // GPT-2, Llama 3
    if (!text.empty()) on_text(text);
    return;
  }
  split_added(
      text, raw_added_,
      [&](std::string_view stretch) {
        if (!vocab_.nfc) return split_added(stretch, normalized_added_, on_text, on_added);
        const std::string normalized = nfc_normalize(stretch);
        split_added(normalized, normalized_added_, on_text, on_added);
      },
      on_added);
}

bool BpeTokenizer::emit_whole_token(std::string_view piece, std::vector<std::int32_t>& out) const {
  if (!vocab_.ignore_merges) return false;
  const auto it = whole_tokens_.find(piece);
  if (it == whole_tokens_.end()) return false;
  out.push_back(it->second);
  return true;
}

const BpeTokenizer::Merge* BpeTokenizer::find_merge(std::int32_t a, std::int32_t b) const {
  auto it = merges_.find(bpe_pair_key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeTokenizer::merge_ref(std::string_view piece, std::vector<std::int32_t>& out) const {
  std::vector<std::int32_t> word;
  for (unsigned char c : piece) word.push_back(byte_token_[c]);
  while (word.size() > 1) {
    const Merge* best = nullptr;
    std::int32_t left = 0, right = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const Merge* m = find_merge(word[i], word[i + 1]);
      if (m != nullptr && (best == nullptr || m->rank < best->rank))
        best = m, left = word[i], right = word[i + 1];
    }
    if (best == nullptr) break;
    std::vector<std::int32_t> merged;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
        merged.push_back(best->result);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word.swap(merged);
  }
  out.insert(out.end(), word.begin(), word.end());
}

void BpeTokenizer::merge_heap(std::string_view piece, std::vector<std::int32_t>& out) {
  const int n = static_cast<int>(piece.size());
  sym_.resize(n);
  prev_.resize(n);
  next_.resize(n);
  for (int i = 0; i < n; ++i) {
    sym_[i] = byte_token_[static_cast<unsigned char>(piece[i])];
    prev_[i] = i - 1;
    next_[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    std::int32_t rank, pos, left, right;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int i) {
    if (i < 0 || next_[i] < 0) return;
    if (const Merge* m = find_merge(sym_[i], sym_[next_[i]]))
      heap.push({m->rank, i, sym_[i], sym_[next_[i]]});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int i = c.pos, j = next_[i];
    // Stale: the left symbol was merged away (its id changed or it was absorbed) or its neighbour changed.
    if (sym_[i] != c.left || j < 0 || sym_[j] != c.right) continue;
    sym_[i] = find_merge(c.left, c.right)->result;
    sym_[j] = -1;  // absorbed
    next_[i] = next_[j];
    if (next_[j] >= 0) prev_[next_[j]] = i;
    push(prev_[i]);
    push(i);
  }
  for (int i = 0; i >= 0 && n > 0; i = next_[i]) out.push_back(sym_[i]);
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) {
  if (piece.size() == 1) {
    out.push_back(byte_token_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (emit_whole_token(piece, out)) return;
  if (!training_order_) {
    merge_ref(piece, out);
    return;
  }
  if (auto it = cache_.find(piece); it != cache_.end()) {
    out.insert(out.end(), cache_tokens_.begin() + it->second.first,
               cache_tokens_.begin() + it->second.first + it->second.second);
    return;
  }
  const std::size_t first = out.size();
  merge_heap(piece, out);
  if (piece.size() > kCachedPieceBytes) return;  // a long run (say, a base64 blob) is not worth keeping
  if (cache_.size() >= kCacheEntries) {
    cache_.clear();
    cache_tokens_.clear();
  }
  cache_.emplace(std::string(piece),
                 std::pair<std::uint32_t, std::uint32_t>(static_cast<std::uint32_t>(cache_tokens_.size()),
                                                         static_cast<std::uint32_t>(out.size() - first)));
  cache_tokens_.insert(cache_tokens_.end(), out.begin() + first, out.end());
}

void BpeTokenizer::encode(std::string_view text, std::vector<std::int32_t>& out) {
  segment(
      text,
      [&](std::string_view stretch) {
        PreTokenizer pre(vocab_.pretokenizer, stretch);
        std::string_view piece;
        while (pre.next(piece)) encode_piece(piece, out);
      },
      [&](std::int32_t id) { out.push_back(id); });
}

void BpeTokenizer::encode_chunked(std::string_view text, std::size_t chunk_tokens,
                                  const std::function<void(std::span<const std::int32_t>)>& sink) {
  std::vector<std::int32_t> buf;
  auto flush_if_full = [&] {
    if (buf.size() >= chunk_tokens) {
      sink(buf);
      buf.clear();
    }
  };
  segment(
      text,
      [&](std::string_view stretch) {
        PreTokenizer pre(vocab_.pretokenizer, stretch);
        std::string_view piece;
        while (pre.next(piece)) {
          encode_piece(piece, buf);
          flush_if_full();
        }
      },
      [&](std::int32_t id) {
        buf.push_back(id);
        flush_if_full();
      });
  if (!buf.empty()) sink(buf);
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) {
  std::vector<std::int32_t> out;
  encode(text, out);
  return out;
}

std::vector<std::int32_t> BpeTokenizer::encode_ref(std::string_view text) const {
  std::vector<std::int32_t> out;
  segment(
      text,
      [&](std::string_view stretch) {
        for (std::string_view piece : pretokenize(vocab_.pretokenizer, stretch))
          if (!emit_whole_token(piece, out)) merge_ref(piece, out);
      },
      [&](std::int32_t id) { out.push_back(id); });
  return out;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || vocab_.tokens[id].empty())
      fail_input("tokenizer {}: token id {} at index {} is not in the vocabulary of {}", vocab_.origin, id, i,
                 vocab_size());
    out += vocab_.tokens[id];
  }
  return out;
}

}  // namespace tz
