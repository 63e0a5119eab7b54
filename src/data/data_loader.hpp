// Data loader for data-parallel training. The token sequence is cut into W = (n - 1) / T windows of
// T + 1 tokens (window w starts at token w T; inputs are its first T tokens, targets its last T).
// Every epoch visits the windows in a fresh order: a permutation drawn from (seed, epoch) alone.
// A step takes the next world x B windows of that order; rank r gets rows r B .. r B + B - 1 of them.
// So:
//   - ranks' streams are disjoint within an epoch and deterministic given the seed;
//   - the batches of ranks 0..N-1 of a world of N, stacked in rank order, are exactly the batch of one
//     loader with world 1 and batch N B (the single-process reference of an N-rank run, see
//     DataLoader::union_of_ranks);
//   - an epoch has W / (world B) steps (the remainder of the order is skipped).
// The position (epoch, step) can be saved and restored.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tz {

struct DataLoaderState {
  std::uint64_t epoch = 0;
  std::uint64_t step = 0;  // steps taken in this epoch
  bool operator==(const DataLoaderState&) const = default;
};

class DataLoader {
 public:
  // `tokens` must outlive the loader. InputError naming `origin` if the data holds fewer than
  // world x B windows of T + 1 tokens, or if B, T, rank or world are invalid.
  DataLoader(std::span<const std::int32_t> tokens, int B, int T, int rank, int world, std::uint64_t seed,
             std::string origin = "data");

  // Fills inputs and targets, (B, T) each, and advances.
  void next(std::int32_t* inputs, std::int32_t* targets);

  DataLoaderState state() const { return state_; }
  void restore(const DataLoaderState& state);

  std::size_t num_windows() const { return windows_; }
  std::size_t steps_per_epoch() const { return windows_ / (static_cast<std::size_t>(world_) * B_); }
  int batch() const { return B_; }
  int seq() const { return T_; }

  // The single-process view of an N-rank run: a loader with world 1 and batch N x B, whose every batch
  // is the rank-ordered stack of what ranks 0..N-1 of `world` N with batch B receive.
  static DataLoader union_of_ranks(std::span<const std::int32_t> tokens, int B, int T, int world,
                                   std::uint64_t seed, std::string origin = "data");

 private:
  void make_order(std::uint64_t epoch);

  std::span<const std::int32_t> tokens_;
  int B_, T_, rank_, world_;
  std::uint64_t seed_;
  std::size_t windows_ = 0;
  DataLoaderState state_;
  std::uint64_t order_epoch_ = ~0ULL;
  std::vector<std::uint32_t> order_;
};

}  // namespace tz
