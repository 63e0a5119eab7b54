// Transport: the point-to-point layer every collective algorithm is written against (gloo's Context,
// astra-sim's network API). A transport is one group of ranks 0..size()-1; it moves bytes to and from
// a peer of the group with a tag, and nothing else. The collective algorithms (comm/*_ring.cpp,
// all_to_all_pairwise.cpp, ...) are written once over it, so ranks-as-threads, MPI and a simulated
// clock all run the same algorithm code.
//
// Semantics (MPI's, restricted to what the algorithms need):
//  - isend/irecv post a non-blocking operation and return a Request. The buffer must stay alive and
//    untouched until the request completes (or is cancelled).
//  - Messages between one (sender, receiver, tag) pair match in posting order (non-overtaking).
//    The receive size must equal the send size (a mismatch is a CommError).
//  - Tags are in [0, kMaxTag]; the Communicator reserves tags >= kFirstReservedTag for its own
//    bookkeeping (size checks, split), algorithms use the tags below.
//  - wait_all blocks (yielding or sleeping, never spinning hard) until every request completes or the
//    deadline passes. It never throws on timeout: it returns false and leaves the unfinished requests
//    in place, so the caller can name the peers it was waiting for and then cancel(). When it throws
//    (the group was aborted, or a request failed), it has first cancelled the call's other unfinished
//    requests, so the caller's buffers may be freed as the exception unwinds.
//  - split is collective over the group (every rank calls it, in the same order relative to other
//    collective use of the transport) and returns the new group of the ranks with equal color, ordered
//    by (key, old rank).
//  - now_s is the clock used to time collectives (the traffic ledger's seconds). Real transports
//    return wall-clock seconds; a simulated transport returns its simulated time.
//  - can_share_memory / check_aborted: see below (the shared-memory collectives).
//  - inject_delay: a hook for delay injection (see below).
//  - on_local_reduce tells the transport that an algorithm just reduced `bytes` of incoming data into
//    its accumulator, so a simulated clock can charge for the arithmetic. Real transports ignore it.
//
// Thread safety: one transport is driven by one thread at a time (the progress thread of the
// Communicator that owns it). Distinct transports of one process may be used concurrently.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"

namespace tz {

// A wait that passed its deadline (a CommError naming the op, group, sequence and missing ranks):
// the communicator hands it to the fault agreement (comm/fault_agreement.hpp) before failing.
class CommTimeout : public CommError {
 public:
  using CommError::CommError;
};

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Handle of one posted send or receive. `id` belongs to the transport that issued it (0 = none or
// already completed); `peer` (group rank) and `is_send` are kept for error reports.
struct Request {
  std::uint64_t id = 0;
  int peer = -1;
  bool is_send = false;
  bool pending() const { return id != 0; }
};

class Transport {
 public:
  static constexpr int kMaxTag = 32767;  // the smallest MPI_TAG_UB the MPI standard allows
  static constexpr int kFirstReservedTag = 32000;

  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // World rank of group rank `peer` (for error reports); the group rank itself where unknowable.
  virtual int world_rank(int peer) const = 0;

  virtual Request isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* data, std::size_t bytes, int peer, int tag) = 0;

  // Waits for all of `requests`; completed ones are reset to Request{}. True when all completed,
  // false when the deadline passed first (the rest stay pending).
  virtual bool wait_all(std::span<Request> requests, Deadline deadline) = 0;
  // Abandons pending requests after a failure: receives are cancelled so their buffers may be freed;
  // sends are cancelled where the transport can (MPI cannot always; the job is aborted then anyway).
  virtual void cancel(std::span<Request> requests) = 0;

  virtual std::unique_ptr<Transport> split(int color, int key, Deadline deadline) = 0;

  // True when the ranks of this group may map one shared-memory segment (POSIX shm): processes of an
  // MPI job or threads of one process. The shared-memory collectives (shared_arena.hpp) still check
  // that they really do before using it; a simulated transport says false.
  virtual bool can_share_memory() const { return false; }
  // Throws CommError when the group was aborted; waits that do not go through wait_all (polling
  // shared memory) call it so an abort still ends them at once.
  virtual void check_aborted() {}

  // Sleeps a random, bounded time when this transport injects delays (delay_transport.hpp), else
  // does nothing. Shared-memory algorithms, whose data does not pass through isend/irecv, call it
  // before each publication so that their interleavings get shuffled too.
  virtual void inject_delay() {}

  virtual double now_s() const {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  }
  virtual void on_local_reduce(std::size_t /*bytes*/) {}
};

// Every rank's (color, key) for a split, indexed by group rank: the first step of each transport's
// split(), with the deadline (split_keys.cpp). CommError naming the ranks that did not arrive.
std::vector<std::array<int, 2>> exchange_split_keys(Transport& t, int color, int key, Deadline deadline);

}  // namespace tz
