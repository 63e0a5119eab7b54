#include "data/data_loader.hpp"

#include <algorithm>

#include "core/counter_rng.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

constexpr std::int64_t kAnyInt32 = std::int64_t{1} << 31;

std::uint64_t shard_order_key(std::uint64_t seed, std::uint64_t epoch) {
  return splitmix64(seed ^ splitmix64(2 * epoch + 1));
}

std::uint64_t window_order_key(std::uint64_t seed, std::uint64_t epoch, std::size_t shard) {
  return splitmix64(splitmix64(seed ^ splitmix64(2 * epoch + 2)) ^ splitmix64(shard));
}

}  // namespace

DataLoader::DataLoader(ShardSet data, const DataLoaderOptions& options)
    : data_(std::move(data)), opt_(options) {
  const std::string& origin = data_.spec();
  if (opt_.batch <= 0 || opt_.seq <= 0)
    fail_input("data {}: batch {} and sequence length {} must be positive", origin, opt_.batch, opt_.seq);
  if (opt_.world <= 0 || opt_.rank < 0 || opt_.rank >= opt_.world)
    fail_input("data {}: rank {} outside world of {}", origin, opt_.rank, opt_.world);
  if (opt_.vocab_size < 0 || opt_.vocab_size > kAnyInt32)
    fail_input("data {}: vocabulary size {} must be in [1, 2^31] (0: any id)", origin, opt_.vocab_size);
  if (opt_.vocab_size == 0) opt_.vocab_size = kAnyInt32;
  if (data_.shards().empty()) fail_input("data {}: no shards", origin);
  for (std::size_t s = 0; s < data_.shards().size(); ++s) {
    const TokenShard& sh = data_.shards()[s];
    if (shard_windows(s) == 0)
      fail_input("data {}: {} tokens, fewer than one window of T + 1 = {} tokens ({} shard)", sh.name,
                 sh.count, static_cast<std::int64_t>(opt_.seq) + 1, shard_format_name(sh.format));
    windows_ += shard_windows(s);
    // Tokens already in memory are checked whole here (cheap, and the error comes before training);
    // mapped shards are checked window by window as they are read.
    if (sh.format == ShardFormat::memory_int32) validate_tokens(sh, opt_.vocab_size);
  }
  if (windows_ > (1ULL << 62))
    fail_input("data {}: {} windows is more than this loader indexes", origin, windows_);
  if (windows_ < windows_per_next())
    fail_input(
        "data {}: too short: {} tokens give {} windows of T+1 = {} tokens, fewer than batch {} x {} ranks",
        origin, data_.total_tokens(), windows_, opt_.seq + 1, opt_.batch, opt_.world);
  window_buf_.resize(static_cast<std::size_t>(opt_.seq) + 1);
}

DataLoader::DataLoader(std::span<const std::int32_t> tokens, int B, int T, int rank, int world,
                       std::uint64_t seed, std::string origin)
    : DataLoader(ShardSet::view(tokens, std::move(origin)),
                 {.batch = B, .seq = T, .rank = rank, .world = world, .seed = seed, .vocab_size = 0}) {}

DataLoader DataLoader::union_of_ranks(std::span<const std::int32_t> tokens, int B, int T, int world,
                                      std::uint64_t seed, std::string origin) {
  return DataLoader(tokens, world * B, T, 0, 1, seed, std::move(origin));
}

DataLoader DataLoader::union_of_ranks(ShardSet data, DataLoaderOptions options) {
  options.batch *= options.world;
  options.rank = 0;
  options.world = 1;
  return DataLoader(std::move(data), options);
}

std::uint64_t DataLoader::shard_windows(std::size_t s) const {
  const std::size_t n = data_.shards()[s].count;
  return n > 0 ? (n - 1) / static_cast<std::size_t>(opt_.seq) : 0;
}

void DataLoader::prepare_epoch(std::uint64_t epoch) const {
  if (cached_epoch_ == epoch) return;
  const std::size_t shards = data_.shards().size();
  shard_order_ = SeededPermutation(shards, shard_order_key(opt_.seed, epoch));
  shard_start_.assign(shards + 1, 0);
  for (std::size_t j = 0; j < shards; ++j)
    shard_start_[j + 1] = shard_start_[j] + shard_windows(shard_order_(j));
  cached_epoch_ = epoch;
}

SeededPermutation DataLoader::window_order(std::uint64_t epoch, std::size_t shard) const {
  return SeededPermutation(shard_windows(shard), window_order_key(opt_.seed, epoch, shard));
}

WindowRef DataLoader::window_at(std::uint64_t position) const {
  const std::uint64_t epoch = position / windows_, i = position % windows_;
  prepare_epoch(epoch);
  const std::size_t j = static_cast<std::size_t>(
      std::upper_bound(shard_start_.begin(), shard_start_.end(), i) - shard_start_.begin() - 1);
  const std::size_t s = static_cast<std::size_t>(shard_order_(j));
  return {s, window_order(epoch, s)(i - shard_start_[j])};
}

WindowRef DataLoader::window_at_ref(std::uint64_t position) const {
  const std::uint64_t epoch = position / windows_, i = position % windows_;
  const SeededPermutation shards(data_.shards().size(), shard_order_key(opt_.seed, epoch));
  std::uint64_t k = 0;
  for (std::size_t j = 0; j < data_.shards().size(); ++j) {
    const std::size_t s = static_cast<std::size_t>(shards(j));
    const SeededPermutation windows = window_order(epoch, s);
    for (std::uint64_t l = 0; l < windows.size(); ++l, ++k)
      if (k == i) return {s, windows(l)};
  }
  TZ_CHECK(false, "position {} beyond the epoch's {} windows", position, windows_);
  return {};
}

void DataLoader::next(std::int32_t* inputs, std::int32_t* targets) {
  const std::size_t T = static_cast<std::size_t>(opt_.seq);
  for (int b = 0; b < opt_.batch; ++b) {
    const WindowRef w = window_at(position_ + static_cast<std::uint64_t>(opt_.rank) * opt_.batch + b);
    read_tokens(data_.shards()[w.shard], w.window * T, T + 1, window_buf_.data(), opt_.vocab_size);
    std::copy(window_buf_.begin(), window_buf_.begin() + T, inputs + b * T);
    std::copy(window_buf_.begin() + 1, window_buf_.end(), targets + b * T);
  }
  position_ += windows_per_next();
}

DataCursor DataLoader::cursor() const {
  return {.position = position_,
          .seed = opt_.seed,
          .seq = opt_.seq,
          .windows_per_epoch = windows_,
          .fingerprint = data_.fingerprint()};
}

void DataLoader::restore(const DataCursor& c) {
  const DataCursor mine = cursor();
  if (c.seq != mine.seq)
    fail_input("data {}: the data cursor was saved with sequence length {}, this run uses {}", data_.spec(),
               c.seq, mine.seq);
  if (c.fingerprint != mine.fingerprint || c.windows_per_epoch != mine.windows_per_epoch)
    fail_input(
        "data {}: the data cursor was saved for other data ({} windows per epoch, fingerprint {:016x}); this "
        "data has "
        "{} windows of T+1 = {} tokens, fingerprint {:016x}",
        data_.spec(), c.windows_per_epoch, c.fingerprint, mine.windows_per_epoch, opt_.seq + 1,
        mine.fingerprint);
  if (c.seed != mine.seed)
    fail_input("data {}: the data cursor was saved with data seed {}, this run uses {}", data_.spec(), c.seed,
               mine.seed);
  position_ = c.position;
}

}  // namespace tz
