#include "data/data_loader.hpp"

#include <numeric>

#include "core/error.hpp"
#include "model/counter_rng.hpp"

namespace tz {

DataLoader::DataLoader(std::span<const std::int32_t> tokens, int B, int T, int rank, int world,
                       std::uint64_t seed, std::string origin)
    : tokens_(tokens), B_(B), T_(T), rank_(rank), world_(world), seed_(seed) {
  if (B <= 0 || T <= 0) fail_input("data {}: batch {} and sequence length {} must be positive", origin, B, T);
  if (world <= 0 || rank < 0 || rank >= world)
    fail_input("data {}: rank {} outside world of {}", origin, rank, world);
  windows_ = tokens.size() > 0 ? (tokens.size() - 1) / T : 0;
  if (windows_ >= (1ULL << 32))
    fail_input("data {}: {} windows is more than this loader indexes", origin, windows_);
  const std::size_t need = static_cast<std::size_t>(world) * B;
  if (windows_ < need)
    fail_input(
        "data {}: too short: {} tokens give {} windows of T+1 = {} tokens, fewer than batch {} x {} ranks",
        origin, tokens.size(), windows_, T + 1, B, world);
}

DataLoader DataLoader::union_of_ranks(std::span<const std::int32_t> tokens, int B, int T, int world,
                                      std::uint64_t seed, std::string origin) {
  return DataLoader(tokens, world * B, T, 0, 1, seed, std::move(origin));
}

void DataLoader::make_order(std::uint64_t epoch) {
  if (order_epoch_ == epoch) return;
  order_.resize(windows_);
  std::iota(order_.begin(), order_.end(), 0u);
  // Fisher-Yates with a counter-based stream: draw i uses counter (epoch, i).
  const std::uint64_t s = splitmix64(seed_ ^ splitmix64(epoch + 0x5151));
  for (std::size_t i = windows_ - 1; i > 0; --i) {
    const std::size_t j = splitmix64(s + i) % (i + 1);
    std::swap(order_[i], order_[j]);
  }
  order_epoch_ = epoch;
}

void DataLoader::next(std::int32_t* inputs, std::int32_t* targets) {
  if (state_.step >= steps_per_epoch()) {
    ++state_.epoch;
    state_.step = 0;
  }
  make_order(state_.epoch);
  const std::size_t first = (state_.step * world_ + rank_) * B_;
  for (int b = 0; b < B_; ++b) {
    const std::int32_t* w = tokens_.data() + static_cast<std::size_t>(order_[first + b]) * T_;
    for (int t = 0; t < T_; ++t) {
      inputs[b * T_ + t] = w[t];
      targets[b * T_ + t] = w[t + 1];
    }
  }
  ++state_.step;
}

void DataLoader::restore(const DataLoaderState& state) {
  TZ_CHECK_LE(state.step, steps_per_epoch());
  state_ = state;
}

}  // namespace tz
