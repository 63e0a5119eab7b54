// Data loader for data-parallel training over a ShardSet (shard_set.hpp).
//
// Terms. T is the sequence length. Shard s of n_s tokens holds W_s = (n_s - 1) / T windows of T + 1
// tokens (window w starts at token w T; inputs are its first T tokens, targets its last T); windows
// never cross shards. W = sum of W_s windows make an epoch.
//
// The global stream. One stream of windows, the same on every rank and for every world size:
// position p is window i = p mod W of epoch e = p / W. Epoch e visits the shards in a seeded
// order (a permutation of the shards from (seed, e)) and, inside shard s, its windows in a seeded
// order (a permutation of [0, W_s) from (seed, e, s)); both are O(1)-memory bijections
// (seeded_permutation.hpp), so any position is computed directly. Epochs follow one another with
// nothing skipped: a batch that reaches the end of epoch e takes the rest of it and continues with
// the first windows of epoch e + 1.
//
// Ranks. Every call of next() consumes the next G = world x B windows of the stream: rank r gets
// positions p + r B .. p + r B + B - 1 (rank-ordered blocks of B), and the cursor moves to p + G.
// So:
//   - ranks' windows are disjoint within a call, and within an epoch as long as W >= G positions
//     are not wrapped (required: W >= G);
//   - the batches of ranks 0..N-1, stacked in rank order, are exactly the batch of one loader with
//     world 1 and batch N B (union_of_ranks: the single-process reference of an N-rank run);
//   - the cursor (data_cursor.hpp) is the global position: restoring it with another world size or
//     batch continues the same stream, nothing repeated, nothing skipped.
//
// Token ids are checked lazily, as each window is copied (one comparison per token): an id outside
// [0, vocab) is an InputError naming the file, token index and byte offset. An up-front scan would
// read every byte of every shard on every rank before the first step (minutes for a 10^10-token set)
// and defeat streaming; the lazy check costs nothing next to the copy. Tokens held in memory (the
// default corpus) are checked whole when the loader is made.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/data_cursor.hpp"
#include "data/seeded_permutation.hpp"
#include "data/shard_set.hpp"

namespace tz {

struct DataLoaderOptions {
  int batch = 1;  // B: windows per rank per next()
  int seq = 1;    // T
  int rank = 0;
  int world = 1;
  std::uint64_t seed = 0;       // the order's seed
  std::int64_t vocab_size = 0;  // token ids must lie in [0, vocab_size); 0: any non-negative int32
};

// A window of the stream: shard index in the set and window index in that shard.
struct WindowRef {
  std::size_t shard = 0;
  std::uint64_t window = 0;
  bool operator==(const WindowRef&) const = default;
};

class DataLoader {
 public:
  // InputError naming the data if B, T, rank, world or the vocabulary are invalid, if a shard holds
  // fewer than T + 1 tokens (naming the shard), or if the data has fewer than world x B windows.
  DataLoader(ShardSet data, const DataLoaderOptions& options);
  // Over tokens in memory (owned elsewhere: they must outlive the loader).
  DataLoader(std::span<const std::int32_t> tokens, int B, int T, int rank, int world, std::uint64_t seed,
             std::string origin = "data");

  // Fills inputs and targets, (B, T) each, with this rank's windows of the next G, and advances.
  void next(std::int32_t* inputs, std::int32_t* targets);

  DataCursor cursor() const;
  // Continues from `cursor` (any world size or batch). InputError if it was made for another data
  // set (fingerprint, windows per epoch), sequence length or seed, naming both values.
  void restore(const DataCursor& cursor);

  // The window at global position p (any epoch), and its plain reference: the epoch's whole order
  // enumerated shard by shard (O(W) time; for tests).
  WindowRef window_at(std::uint64_t position) const;
  WindowRef window_at_ref(std::uint64_t position) const;

  std::uint64_t num_windows() const { return windows_; }  // W, windows per epoch
  std::uint64_t windows_per_next() const { return static_cast<std::uint64_t>(opt_.world) * opt_.batch; }
  int batch() const { return opt_.batch; }
  int seq() const { return opt_.seq; }
  const ShardSet& data() const { return data_; }

  // The single-process view of an N-rank run: a loader with world 1 and batch N x B, whose every batch
  // is the rank-ordered stack of what ranks 0..N-1 of `world` N with batch B receive.
  static DataLoader union_of_ranks(std::span<const std::int32_t> tokens, int B, int T, int world,
                                   std::uint64_t seed, std::string origin = "data");
  static DataLoader union_of_ranks(ShardSet data, DataLoaderOptions options);

 private:
  std::uint64_t shard_windows(std::size_t s) const;
  void prepare_epoch(std::uint64_t epoch) const;
  SeededPermutation window_order(std::uint64_t epoch, std::size_t shard) const;

  ShardSet data_;
  DataLoaderOptions opt_;
  std::uint64_t windows_ = 0;
  std::uint64_t position_ = 0;
  std::vector<std::int32_t> window_buf_;
  // Per-epoch cache: shard order and its prefix sums of windows (O(shards) memory).
  mutable std::uint64_t cached_epoch_ = ~0ULL;
  mutable SeededPermutation shard_order_;
  mutable std::vector<std::uint64_t> shard_start_;  // first epoch index of the j-th shard in order
};

}  // namespace tz
