#include "data/shard_set.hpp"

#include <glob.h>

#include <cmath>
#include <set>
#include <unordered_map>

#include "core/error.hpp"

namespace tz {
namespace {

bool is_pattern(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> split_list(const std::string& spec) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = spec.find(',', start);
    items.push_back(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && out.empty()))
    fail_input("--data: pattern '{}' matches no file", pattern);
  if (rc != 0) fail_input("--data: pattern '{}': cannot read a folder it names", pattern);
  return out;  // glob sorts its matches by name
}

}  // namespace

std::vector<std::string> expand_data_spec(const std::string& spec) {
  if (spec.empty())
    fail_input("--data: empty value (a file, a comma-separated list or a glob such as 'data/*.bin')");
  std::vector<std::string> files;
  for (const std::string& item : split_list(spec)) {
    if (item.empty()) fail_input("--data '{}': empty item in the comma-separated list", spec);
    if (is_pattern(item)) {
      for (auto& f : glob_files(item)) files.push_back(std::move(f));
    } else {
      files.push_back(item);
    }
  }
  std::set<std::string> seen;
  for (const auto& f : files)
    if (!seen.insert(f).second) fail_input("--data '{}': file {} is named twice", spec, f);
  return files;
}

ShardSet::ShardSet(std::vector<TokenShard> shards) : shards_(std::move(shards)) {
  for (const auto& s : shards_) spec_ += (spec_.empty() ? "" : ",") + s.name;
}

ShardSet ShardSet::open(const std::string& spec) {
  std::vector<TokenShard> shards;
  for (const auto& f : expand_data_spec(spec)) shards.push_back(open_token_shard(f));
  for (const auto& s : shards)
    if ((s.format == ShardFormat::text) != (shards[0].format == ShardFormat::text))
      fail_input("--data '{}': {} is {} but {} is {}: text (byte tokens) and token shards do not mix", spec,
                 shards[0].name, shard_format_name(shards[0].format), s.name, shard_format_name(s.format));
  ShardSet set(std::move(shards));
  set.spec_ = spec;
  return set;
}

ShardSet ShardSet::from_tokens(std::vector<std::int32_t> tokens, std::string name) {
  std::vector<TokenShard> shards;
  shards.push_back(memory_shard(std::make_shared<const std::vector<std::int32_t>>(std::move(tokens)), name));
  return ShardSet(std::move(shards));
}

ShardSet ShardSet::view(std::span<const std::int32_t> tokens, std::string name) {
  std::vector<TokenShard> shards;
  shards.push_back(memory_view_shard(tokens, std::move(name)));
  return ShardSet(std::move(shards));
}

std::size_t ShardSet::total_tokens() const {
  std::size_t n = 0;
  for (const auto& s : shards_) n += s.count;
  return n;
}

bool ShardSet::is_text() const {
  return !shards_.empty() && shards_[0].format == ShardFormat::text;
}

std::string ShardSet::describe() const {
  if (shards_.empty()) return "no data";
  std::set<std::string> formats;
  for (const auto& s : shards_) formats.insert(shard_format_name(s.format));
  std::string f;
  for (const auto& x : formats) f += (f.empty() ? "" : ", ") + x;
  return fmt::format("{}: {} shard{} ({}), {} tokens", spec_, shards_.size(), shards_.size() == 1 ? "" : "s",
                     f, total_tokens());
}

std::uint64_t ShardSet::fingerprint() const {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over (count, width) of each shard, in order
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  for (const auto& s : shards_) {
    mix(s.count);
    mix(static_cast<std::uint64_t>(s.token_bytes));
  }
  return h;
}

double ShardSet::unigram_entropy_nats(std::int64_t vocab_size, std::size_t max_tokens) const {
  const std::size_t total = total_tokens();
  if (total == 0) return 0;
  std::vector<std::uint64_t> small(65536, 0);  // ids < 2^16; others in the map
  std::unordered_map<std::int32_t, std::uint64_t> large;
  std::vector<std::int32_t> buf;
  std::size_t counted = 0;
  auto count = [&](const TokenShard& s, std::size_t first, std::size_t n) {
    buf.resize(n);
    read_tokens(s, first, n, buf.data(), vocab_size);  // every id in [0, vocab_size), or an InputError
    for (auto t : buf) t < 65536 ? ++small[static_cast<std::size_t>(t)] : ++large[t];
    counted += n;
  };
  if (total <= max_tokens) {
    for (const auto& s : shards_) count(s, 0, s.count);
  } else {
    constexpr std::size_t kChunk = 1 << 16;
    const std::size_t chunks = std::max<std::size_t>(1, max_tokens / kChunk);
    const std::size_t stride = total / chunks;  // >= kChunk since total > max_tokens
    std::size_t shard = 0, base = 0;            // global token index of shards_[shard]'s first token
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t at = c * stride;
      while (at >= base + shards_[shard].count) base += shards_[shard++].count;
      const std::size_t first = at - base;
      count(shards_[shard], first, std::min(kChunk, shards_[shard].count - first));
    }
  }
  double h = 0;
  const double n = static_cast<double>(counted);
  auto add = [&](std::uint64_t c) {
    if (c == 0) return;
    const double p = static_cast<double>(c) / n;
    h -= p * std::log(p);
  };
  for (auto c : small) add(c);
  for (const auto& [t, c] : large) add(c);
  return h;
}

}  // namespace tz
