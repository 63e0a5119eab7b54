// The Communicator: one group of ranks (a tier group, the world, or any split of it). It owns its
// rank, size, timeout and transport; every collective is non-blocking and returns a Work handle, so
// callers overlap communication with compute and wait only when they need the result. There is one
// API per operation: a blocking call is `comm.all_gather(...).wait()`.
//
// Buffers: counts are in elements of `dtype`; `send` and `recv` must stay alive and untouched until
// the Work completes. Layouts:
//   all_gather:     send = count,          recv = size()*count, rank r's block at r*count
//   reduce_scatter: send = size()*count,   recv = count, rank r gets the sum of every rank's block r
//   all_reduce:     send = count,          recv = count (send == recv allowed)
//   all_to_all:     send = size()*count,   recv = size()*count; block j of rank i lands at block i of j
//   broadcast:      buf = count on every rank, root's content wins
// Reductions are sums (fp32 accumulate for bf16). Collectives on one communicator must be issued in
// the same order on all its ranks; they complete in issue order.
//
// One implementation (stream_communicator.cpp: collectives in issue order on a progress thread) over
// any Transport of comm/transport/: ranks as threads for unit tests, MPI processes, or a simulated
// clock for the cost model. All run the same algorithm code (comm/*_ring.cpp and friends).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "collective/collective_plan.hpp"
#include "comm/comm_options.hpp"
#include "comm/flight_recorder.hpp"
#include "comm/traffic.hpp"
#include "comm/transport/transport.hpp"
#include "core/dtype.hpp"
#include "device/work.hpp"

namespace tz {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Tier label used by the traffic ledger and in error reports ("gcd", "node", "world", ...).
  virtual const std::string& label() const = 0;
  virtual const CommOptions& options() const = 0;
  virtual TrafficLedger& ledger() = 0;
  // The flight recorder of this rank (shared by the communicators split from one world).
  virtual const std::shared_ptr<FlightRecorder>& recorder() const = 0;
  // Whether its transport lets the ranks map one shared-memory segment (Transport::can_share_memory).
  virtual bool can_share_memory() const = 0;

  // `algorithm`: the one a plan chose for this step (collective/collective_plan.hpp); `automatic`
  // (direct calls outside a plan) lets the communicator's options choose. A planned shared-memory
  // step whose ranks cannot map a shared segment runs over the transport instead, counted in the
  // ledger (TrafficLedger::shared_memory_fallbacks) and the flight recorder.
  virtual Work all_gather(const void* send, void* recv, std::size_t count, DType dtype,
                          StepAlgorithm algorithm = StepAlgorithm::automatic) = 0;
  virtual Work reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                              StepAlgorithm algorithm = StepAlgorithm::automatic) = 0;
  virtual Work all_reduce(const void* send, void* recv, std::size_t count, DType dtype) = 0;  // a ring
  virtual Work all_to_all(const void* send, void* recv, std::size_t count, DType dtype,
                          StepAlgorithm algorithm = StepAlgorithm::automatic) = 0;
  virtual Work broadcast(void* buf, std::size_t count, DType dtype, int root) = 0;
  virtual Work barrier() = 0;

  // Ranks with equal color form a new communicator, ordered by key (MPI_Comm_split semantics); all
  // ranks of this communicator must call it. It shares this communicator's ledger.
  virtual std::unique_ptr<Communicator> split(int color, int key, std::string label) = 0;

  // Stream ordering across communicators (like cudaStreamWaitEvent): collectives issued on this
  // communicator after this call start only once `dependency` (usually a Work of another
  // communicator) has completed; if it failed, they fail too. Mesh composes multi-tier collectives
  // with it, so every step is issued at call time, in the caller's order, on every rank.
  virtual void stream_wait(Work dependency) = 0;
};

// A Communicator over any Transport (threads, MPI, a simulated clock): it runs the collectives of
// comm/*_ring.cpp and friends in issue order on its own progress thread. `ledger` may be shared by
// the communicators of one process (split() shares it); a new one is made when it is null. So is
// `recorder` (a new one takes this transport's group as the world, with a run id of its own: pass
// recorders that share one when the ranks' files are to be traced together). The options are checked
// first (validate_comm_options); with delay injection on, the transport is wrapped in a delay
// transport (comm/transport/delay_transport.hpp).
std::unique_ptr<Communicator> make_communicator(std::unique_ptr<Transport> transport, std::string label,
                                                CommOptions options = {},
                                                std::shared_ptr<TrafficLedger> ledger = nullptr,
                                                std::shared_ptr<FlightRecorder> recorder = nullptr);

}  // namespace tz
