// One running collective, as the algorithms see it: the transport of the group, the deadline, the
// chunk size for pipelining, persistent scratch buffers, and the identity used in error reports
// (op name, group label, sequence number). Algorithms post sends and receives through it and wait
// with wait(); a wait that passes the deadline cancels what is pending and throws a CommError that
// names the op, the group, the sequence number, this rank and the (world) ranks it was waiting for.
#pragma once

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/transport/transport.hpp"

namespace tz {

// Scratch buffers kept alive across collectives (a freed and re-faulted buffer per call halves the
// throughput on small machines). Slot k grows to the largest size asked for and stays.
class Workspace {
 public:
  std::byte* get(int slot, std::size_t bytes);

 private:
  std::vector<std::vector<std::byte>> slots_;
};

class Collective {
 public:
  // `group` is kept by reference (the communicator's label outlives its collectives), so a
  // temporary is refused at compile time: it would dangle by the time a report names it.
  Collective(Transport& transport, Workspace& workspace, std::string_view op, const std::string& group,
             std::uint64_t seq, double timeout_s, std::size_t chunk_bytes);
  Collective(Transport&, Workspace&, std::string_view, std::string&&, std::uint64_t, double,
             std::size_t) = delete;

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  Transport& transport() { return transport_; }
  Workspace& workspace() { return workspace_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  Deadline deadline() const { return deadline_; }
  double timeout_s() const { return timeout_s_; }
  std::uint64_t seq() const { return seq_; }
  int right() const { return (rank() + 1) % size(); }
  int left() const { return (rank() + size() - 1) % size(); }

  Request send(const void* data, std::size_t bytes, int peer, int tag = 0) {
    return transport_.isend(data, bytes, peer, tag);
  }
  Request recv(void* data, std::size_t bytes, int peer, int tag = 0) {
    return transport_.irecv(data, bytes, peer, tag);
  }
  void wait(std::span<Request> requests);
  void wait(Request& request) { wait(std::span<Request>(&request, 1)); }

  // "all_gather on group 'node' (seq 4, rank 1 of 2, world rank 3)": the prefix of every report.
  std::string describe() const;
  [[noreturn]] void fail(const std::string& what) const;
  // The same, as a CommTimeout.
  [[noreturn]] void fail_timeout(const std::string& what) const;
  // The timeout report of a wait that did not go through wait() (shared-memory polling): names the
  // world ranks of the group ranks `behind`.
  [[noreturn]] void fail_not_arrived(std::span<const int> behind) const;

 private:
  Transport& transport_;
  Workspace& workspace_;
  std::string_view op_;
  const std::string& group_;
  std::uint64_t seq_;
  double timeout_s_;
  Deadline deadline_;
  std::size_t chunk_bytes_;
};

// Cancels every request still pending in the watched vectors when its scope is left by an exception
// (a timeout, an aborted group). Algorithms post receives and sends up front and wait for them one by
// one; a failed wait cancels only what it waited for, and without this the rest would outlive the
// buffers they write or read, so a peer's late match would copy into or out of freed memory.
// Requests a wait completed or cancelled are already empty and are skipped. Declare it after the
// vectors it watches.
class CancelPendingOnThrow {
 public:
  CancelPendingOnThrow(Collective& c, std::initializer_list<std::vector<Request>*> watched)
      : c_(c), watched_(watched), uncaught_(std::uncaught_exceptions()) {}
  CancelPendingOnThrow(const CancelPendingOnThrow&) = delete;
  CancelPendingOnThrow& operator=(const CancelPendingOnThrow&) = delete;
  ~CancelPendingOnThrow() {
    if (std::uncaught_exceptions() == uncaught_) return;
    for (std::vector<Request>* requests : watched_) try {
        c_.transport().cancel(*requests);
      } catch (...) {  // already failing: the first error is the one reported
      }
  }

 private:
  Collective& c_;
  std::vector<std::vector<Request>*> watched_;
  int uncaught_;
};

// Splits `bytes` into chunks of at most `chunk` bytes (at least one chunk, possibly empty).
struct Chunks {
  std::size_t bytes, chunk, count;
  Chunks(std::size_t total_bytes, std::size_t chunk_bytes);
  std::size_t offset(std::size_t c) const { return c * chunk; }
  std::size_t length(std::size_t c) const { return c + 1 < count ? chunk : bytes - c * chunk; }
};

}  // namespace tz
