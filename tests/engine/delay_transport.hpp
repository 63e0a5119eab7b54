// A transport wrapper for tests that sleeps a random 0..max_us microseconds before every send and
// receive it posts (seeded per rank), so collectives complete in other orders and at other times
// than they would: a run over it must give bitwise the results of a run without it.
//
// Local to the engine tests until the communication layer ships its own delay-injecting transport
// option; then these tests should use that instead.
#pragma once

#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "comm/thread_world.hpp"
#include "comm/transport/transport.hpp"

namespace tz::test {

class DelayTransport final : public Transport {
 public:
  DelayTransport(std::unique_ptr<Transport> inner, std::uint64_t seed, int max_us)
      : inner_(std::move(inner)), rng_(seed), max_us_(max_us) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int world_rank(int peer) const override { return inner_->world_rank(peer); }
  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    delay();
    return inner_->isend(data, bytes, peer, tag);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    delay();
    return inner_->irecv(data, bytes, peer, tag);
  }
  bool wait_all(std::span<Request> requests, Deadline deadline) override {
    return inner_->wait_all(requests, deadline);
  }
  void cancel(std::span<Request> requests) override { inner_->cancel(requests); }
  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    return std::make_unique<DelayTransport>(inner_->split(color, key, deadline), rng_(), max_us_);
  }
  // Every all-gather goes through the (delayed) ring, not the shared-memory arena.
  bool can_share_memory() const override { return false; }
  void check_aborted() override { inner_->check_aborted(); }

 private:
  void delay() {
    const int us = static_cast<int>(rng_() % static_cast<std::uint64_t>(2 * max_us_ + 1)) - max_us_;
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));  // about half the calls
  }

  std::unique_ptr<Transport> inner_;
  std::mt19937_64 rng_;
  int max_us_;
};

// run_thread_mesh's wrap: every rank's transport delayed, seeded by rank.
inline TransportWrap delayed_transports(int max_us, std::uint64_t seed = 1) {
  return [=](std::vector<std::unique_ptr<Transport>> inner) {
    std::vector<std::unique_ptr<Transport>> out;
    for (std::size_t r = 0; r < inner.size(); ++r)
      out.push_back(std::make_unique<DelayTransport>(std::move(inner[r]), seed * 1000 + r, max_us));
    return out;
  };
}

}  // namespace tz::test
