// A memory segment mapped by every rank of one group on one host (POSIX shared memory), for the
// shared-memory all-gather (all_gather_shared.cpp). Layout: a 64-byte segment header (a random token
// that proves every rank mapped the same memory), then per rank a 128-byte header holding two 64-bit
// counters on their own cache lines, `written` (the last round whose data this rank has put in its
// staging buffer) and `read` (the last round whose peers' data this rank has copied out), then two
// staging buffers of slot_bytes (round g uses buffer g % 2).
//
// Rounds are numbered from 1 on each arena and advance identically on every rank, because all ranks
// run the same collectives in the same order. A rank may overwrite its buffer for round g only once
// every rank's `read` has reached g - 2 (the last round that used the same buffer).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "comm/collective.hpp"

namespace tz {

class SharedArena {
 public:
  // Collective over c's group (every rank calls it at the same point): group rank 0 creates the
  // segment, the others map it and check the token. Returns null on every rank when any rank could
  // not (ranks on different hosts, /dev/shm full or missing), so the caller falls back together.
  static std::unique_ptr<SharedArena> open(Collective& c, std::size_t slot_bytes);

  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();

  std::size_t slot_bytes() const { return slot_bytes_; }
  std::uint64_t next_round() { return ++round_; }
  std::byte* buffer(int rank, std::uint64_t round) const;
  std::atomic_ref<std::uint64_t> written(int rank) const { return std::atomic_ref(counter(rank, 0)); }
  std::atomic_ref<std::uint64_t> read(int rank) const { return std::atomic_ref(counter(rank, 1)); }

  // Waits until every other rank's counter (`written` or `read`) reaches `round`, backing off from
  // polling to yielding to sleeping (oversubscribed ranks must not spin, MACHINE.md). Past c's deadline
  // it fails the collective naming the ranks that are behind; an aborted group throws at once.
  void wait_peers(Collective& c, bool written_counter, std::uint64_t round) const;

 private:
  SharedArena(std::byte* base, std::size_t mapped_bytes, int ranks, std::size_t slot_bytes);
  std::uint64_t& counter(int rank, int which) const;
  std::byte* rank_base(int rank) const;

  std::byte* base_;
  std::size_t mapped_bytes_;
  int ranks_;
  std::size_t slot_bytes_;
  std::uint64_t round_ = 0;
};

// Polls a condition with back-off: back-to-back polls first, then sched_yield, then sleeps doubling
// up to a millisecond. progress() restarts it (the peer is active again).
class Backoff {
 public:
  void pause();
  void progress() { polls_ = 0, since_ = std::chrono::steady_clock::now(), nap_us_ = 50; }
  bool yielding() const { return polls_ >= kSpinPolls; }

 private:
  static constexpr int kSpinPolls = 64;
  int polls_ = 0;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
  int nap_us_ = 50;
};

}  // namespace tz
