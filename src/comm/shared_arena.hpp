// A memory segment mapped by every rank of one group on one host (POSIX shared memory), for the
// shared-memory collectives (all_gather_shared.cpp, all_to_all_shared.cpp, broadcast_shared.cpp,
// reduce_scatter_shared.cpp). Layout: a 64-byte segment header (a random token that proves every
// rank mapped the same memory, and the count of ranks that have mapped it), then per rank a 128-byte
// header holding two 64-bit counters on their own cache lines, `written` (the last round whose data
// this rank has put in its staging buffers) and `read` (the last round whose peers' data this rank
// has copied out), each beside a count of the ranks sleeping on it, then the cross-memory header
// (the rank's pid, and per peer the address and length of the block it offers for in-place reads),
// then two staging buffers of slot_bytes (round g uses buffer g % 2).
//
// Rounds are numbered from 1 on each arena and advance identically on every rank, because all ranks
// run the same collectives in the same order and every collective derives its number of rounds from
// values all ranks share. The rules that make reuse safe, for every algorithm:
//  1. a rank writes staging buffers of parity g % 2 (its own, or others' when they write nothing in
//     that round, as the broadcast's root does) for round g only once every rank's `read` has
//     reached g - 2, the last round that used buffers of that parity;
//  2. a rank that wrote in round g publishes `written` = g after writing;
//  3. a rank reads round-g data only after the writer's `written` reached g, and publishes
//     `read` = g only after it has seen `written` = g of every rank that wrote in round g and has
//     finished reading.
// So every write and read of round g - 2 happens before any write of round g to the same memory.
//
// Waiting: a rank polls a counter for a while (200 us when the host has a core per rank, counting
// the ranks of every group on it, since a peer running on another core publishes soon; 5 us when the
// ranks outnumber the cores), then
// sleeps on it with a futex, which the publishing rank wakes only when someone sleeps there. An
// oversubscribed rank thus gives its core to the peers it waits for instead of spinning or yielding in a
// loop. Sleeps are cut into short slices so that an aborted group or the deadline ends the wait (with a
// report naming the ranks that are behind).
//
// Nothing is left in /dev/shm: the name is unlinked by the last rank to map it, by every rank that
// knows it on any error during set-up or on a termination signal, and otherwise by group rank 0
// after the set-up all-gather. A process killed with SIGKILL during set-up can still leave its
// segment behind; every tierzero process sweeps
// segments whose creating process is gone once, when its MPI world starts or before its first arena
// (sweep_stale_shared_segments).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/collective.hpp"

namespace tz {

class SharedArena {
 public:
  enum class Counter { written = 0, read = 1 };

  // Collective over c's group (every rank calls it at the same point): group rank 0 creates the
  // segment, the others map it and check the token. Returns null on every rank when any rank could
  // not (ranks on different hosts, /dev/shm full or missing), so the caller falls back together.
  // slot_bytes is rounded up to a multiple of 64 and to at least 64 and 8 bytes per rank, so that
  // algorithms cutting a slot into one piece per rank get at least one element per piece.
  // With cross_memory, the ranks also agree whether each may read the others' memory in place
  // (process_vm_readv: the same user and no ptrace restriction), which the all-to-all then uses.
  // ranks_on_host: the ranks of every group on this host (CommOptions::ranks_on_host; 0: not
  // known), which sets how long a wait polls (arena_spin).
  static std::unique_ptr<SharedArena> open(Collective& c, std::size_t slot_bytes, bool cross_memory = true,
                                           int ranks_on_host = 0);

  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();

  int ranks() const { return ranks_; }
  Clock::duration spin() const { return spin_; }  // how long a wait polls before it sleeps
  // The host's ranks outnumber its cores (host_crowded, as any rank of the group saw it; all agree):
  // a rank runs only when the scheduler lets it.
  bool crowded() const { return crowded_; }
  std::size_t slot_bytes() const { return slot_bytes_; }
  std::uint64_t next_round() { return ++round_; }
  std::byte* buffer(int rank, std::uint64_t round) const;

  // True once `rank`'s counter has reached `round` (no waiting).
  bool reached(int rank, Counter which, std::uint64_t round) const;
  // Waits until `rank`'s counter reaches `round`; past c's deadline it fails the collective naming
  // `rank`; an aborted group throws at once.
  void wait(Collective& c, int rank, Counter which, std::uint64_t round) const;
  // The same, but returns false at the deadline (the caller names whom it waited for).
  bool try_wait(Collective& c, int rank, Counter which, std::uint64_t round) const;
  // The same for every rank but this one (the report names all that are behind).
  void wait_peers(Collective& c, Counter which, std::uint64_t round) const;
  // Before writing staging buffers for round g: every rank has read round g - 2 (rule 1).
  void wait_buffers_free(Collective& c, std::uint64_t round) const {
    if (round > 2) wait_peers(c, Counter::read, round - 2);
  }
  // Sets this rank's counter to `round` (release) and wakes the ranks sleeping on it. Under delay
  // injection (delay_transport.hpp) it pauses first, and every wait pauses once it has seen the
  // counter it waited for, before the caller reads what it guards.
  void publish(Collective& c, Counter which, std::uint64_t round) const;

  // Cross-memory reads (the single-copy exchange, exchange_in_place): true when every rank of the
  // group can read every other's memory. A rank offers a block of its own memory for `to` in its
  // header; `to` copies it straight into `out`, which must be as long as the block offered (else the
  // collective fails naming the rank).
  bool cross_memory() const { return cross_memory_; }
  void offer_block(int to, std::span<const std::byte> block);
  void read_offered(Collective& c, int from, std::span<std::byte> out) const;

  // Calls copy(q) once for every rank q != this rank, each once q has published `written` = round,
  // ready ones first (the data-movement loop of the all-gather and all-to-all).
  template <typename Copy>
  void drain(Collective& c, std::uint64_t round, Copy copy);

  // Per-pair flow control (the pair-ring all-to-all, all_to_all_pair_rings.cpp). For every ordered
  // pair (from, to) two counters that only grow over the arena's life, each on its own cache line:
  // `filled` (chunks `from` has put in its ring for `to`, written by `from`) and `freed` (chunks `to`
  // has copied out, written by `to`), then the block headers (below). Each rank also has a doorbell
  // that a peer rings after publishing a pair counter this rank may wait on, so that a rank with
  // nothing to do sleeps on one word whatever it waits for.
  enum class PairCounter { filled = 0, freed = 1 };
  std::uint64_t pair_value(int from, int to, PairCounter which) const;
  // Sets the pair counter (this rank must be `from` for filled, `to` for freed) and rings the
  // doorbell of the pair's other rank.
  void pair_publish(Collective& c, int from, int to, PairCounter which, std::uint64_t value) const;
  // The header of a block `from` sends `to`: the pair-ring call it belongs to, the number of its
  // first chunk and its bytes, kept in header slot first_chunk % kPairBlockSlots. `from` sets it before it
  // publishes that chunk; `to` reads it once it has seen the chunk filled and before it frees it. A sender
  // may run several calls ahead of a receiver (its blocks wait in the ring, and empty blocks take no chunk),
  // but never more than a ring's depth (<= kPairBlockSlots) of chunks past what the receiver has freed, so
  // the header of a block not yet read is never overwritten. A slot never written reads as call kNoPairCall.
  static constexpr std::uint64_t kPairBlockSlots = 64;
  static constexpr std::uint64_t kNoPairCall = ~std::uint64_t{0};
  struct PairBlock {
    std::uint64_t call = kNoPairCall, first_chunk = 0, bytes = 0;
  };
  void set_pair_block(int from, int to, PairBlock block) const;
  // The header in the slot of chunk `chunk` (a block that starts there, or an older one or none).
  PairBlock pair_block(int from, int to, std::uint64_t chunk) const;
  // This rank's doorbell (read it before checking what it waits for).
  std::uint64_t doorbell() const;
  // Polls, then sleeps until this rank's doorbell differs from `seen`; false at c's deadline (the
  // caller names whom it waited for); an aborted group throws.
  bool wait_doorbell(Collective& c, std::uint64_t seen) const;
  // Both staging buffers of `rank`, 2 * slot_bytes() contiguous bytes (the pair rings cut them up).
  std::byte* staging(int rank) const { return buffer(rank, 0); }
  // Pair-ring calls run on this arena so far. A call that directly follows another (no round in
  // between) needs no group-wide wait before it writes, since the pair counters guard the rings; one
  // after any other collective waits as rule 1 says.
  std::uint64_t pair_calls() const { return pair_calls_; }
  bool follows_pair_call() const { return pair_calls_ > 0 && pair_end_round_ == round_; }
  void end_pair_call() { ++pair_calls_, pair_end_round_ = round_; }

 private:
  SharedArena(std::byte* base, std::size_t mapped_bytes, int ranks, int rank, std::size_t slot_bytes,
              int ranks_on_host);
  std::uint64_t* counter(int rank, Counter which) const;
  std::uint32_t* sleepers(int rank, Counter which) const;
  std::byte* rank_base(int rank) const;
  std::uint64_t* cross_entry(int rank, int peer) const;
  std::byte* pair_entry(int from, int to) const;
  std::byte* doorbell_line(int rank) const;  // the doorbell word, then its sleeper count
  void probe_cross_memory(Collective& c);
  // Sleeps (futex) until `rank`'s counter reaches round; false when the deadline passed first.
  bool sleep_until(Collective& c, int rank, Counter which, std::uint64_t round) const;
  // Fails the collective naming those of `ranks` whose counter has not reached `round`.
  [[noreturn]] void fail_behind(Collective& c, std::span<const int> ranks, Counter which,
                                std::uint64_t round) const;

  std::byte* base_;
  std::size_t mapped_bytes_;
  int ranks_;
  int rank_;
  std::size_t slot_bytes_;
  std::uint64_t round_ = 0;
  Clock::duration spin_{};  // how long a wait polls before it sleeps
  bool crowded_ = true;
  bool cross_memory_ = false;
  std::vector<int> pending_;  // drain's scratch, kept to avoid an allocation per round
  std::uint64_t pair_calls_ = 0;
  std::uint64_t pair_end_round_ = 0;  // the round the last pair-ring call ended with
};

// Whether a host that runs `ranks_on_host` ranks in all (0: not known, the group's own count
// `group_ranks`) on `cpus` cores (<= 0: not known, taken as crowded) has more ranks than cores.
bool host_crowded(int group_ranks, int ranks_on_host, long cpus);
// How long a wait of such a group polls before it sleeps: long while every rank has a core, short
// once the host is crowded.
Clock::duration arena_spin(int group_ranks, int ranks_on_host, long cpus);

// Unlinks /dev/shm/tierzero-<pid>-* objects whose creating process no longer exists (kill(pid, 0)
// says ESRCH); returns their names. Objects of live processes and of other programs are kept.
std::vector<std::string> sweep_stale_shared_segments();
// The same, at most once per process: at start-up (make_mpi_world) and before the first arena.
void sweep_stale_shared_segments_once();

template <typename Copy>
void SharedArena::drain(Collective& c, std::uint64_t round, Copy copy) {
  pending_.clear();
  for (int k = 1; k < ranks_; ++k)
    pending_.push_back((rank_ + k) % ranks_);  // rotated: no common first source
  while (!pending_.empty()) {
    bool copied = false;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (!reached(*it, Counter::written, round)) {
        ++it;
        continue;
      }
      c.transport().inject_delay();  // between seeing the counter and reading (delay injection)
      copy(*it);
      it = pending_.erase(it);
      copied = true;
    }
    // Nothing was ready: wait for the first one still missing (all are needed anyway).
    if (!copied && !pending_.empty() && !try_wait(c, pending_.front(), Counter::written, round))
      fail_behind(c, pending_, Counter::written, round);
  }
}

}  // namespace tz
