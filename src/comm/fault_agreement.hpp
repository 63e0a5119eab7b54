// The fault agreement: when a collective times out (or a peer's process is found gone), the live
// ranks exchange their views (comm/fault_verdict.hpp) over a world-level side channel that does not
// depend on the stuck group, with its own deadline, and each computes the same culprit from the same
// views (docs/faults.md).
//
// Steps, on each rank:
//  1. start: the first of (a collective of this rank timed out, a view of another rank arrived, a
//     peer's process is gone) posts this rank's view to every other rank, once;
//  2. collect: views arrive on the channel's thread (deliver); the exchange is complete when every
//     rank not known lost has answered, or when `deadline_s` has passed since this rank started;
//  3. decide: agree_culprit over the views received; the verdict is kept (later timeouts of this rank
//     reuse it) and handed to the verdict hooks (the CLI prints it; MPI ends the rank's waits).
// Channels: ranks as threads share a board in memory (ThreadFaultBoard: a post is delivered at
// once, on the poster's thread); MPI processes use a duplicated world communicator and a listener
// thread (comm/transport/mpi_fault_channel.hpp).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/fault_verdict.hpp"
#include "comm/flight_recorder.hpp"
#include "comm/transport/transport.hpp"

namespace tz {

class FaultChannel {
 public:
  virtual ~FaultChannel() = default;
  // Sends this rank's view to every other rank; never blocks on a peer.
  virtual void post(int from, const std::string& view) = 0;
};

class FaultAgreement {
 public:
  FaultAgreement(std::shared_ptr<FlightRecorder> recorder, double deadline_s);
  ~FaultAgreement();  // removes the timeout hook it installed
  FaultAgreement(const FaultAgreement&) = delete;
  FaultAgreement& operator=(const FaultAgreement&) = delete;

  // Wiring, before the rank communicates: the channel (not owned), an optional probe of peers'
  // processes (world rank -> "gone" | "stopped"), and the recorder's timeout hook.
  void set_channel(FaultChannel* channel);
  void set_peer_probe(std::function<std::map<int, std::string>()> probe);
  void add_on_verdict(std::function<void(const FaultVerdict&)> hook);
  // Every rank's host (by world rank), the same on every rank: a verdict then names the hosts of its
  // culprits, and says when they are every rank of a host (a lost host).
  void set_rank_hosts(std::vector<std::string> hosts);
  void install_timeout_hook();

  double deadline_s() const { return deadline_s_; }
  int world_rank() const { return recorder_->world_rank(); }

  // This rank timed out: starts the exchange (if no one has), waits for the verdict, returns its line.
  std::string on_timeout(const std::string& report);
  // A view from world rank `from` (the channel's thread). Answers with this rank's view first.
  void deliver(int from, const std::string& view);
  // Starts the exchange without a local timeout (a peer's process is gone).
  void start();
  // Decides once the deadline has passed (the channel's thread calls it periodically).
  void poll();

  bool started() const;
  std::optional<FaultVerdict> verdict() const;

 private:
  void post_once();
  bool complete_locked() const;
  void decide(std::unique_lock<std::mutex>& lock);

  const std::shared_ptr<FlightRecorder> recorder_;
  const double deadline_s_;
  FaultChannel* channel_ = nullptr;
  std::function<std::map<int, std::string>()> probe_;
  std::vector<std::function<void(const FaultVerdict&)>> on_verdict_;
  std::vector<std::string> rank_hosts_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool posted_ = false;
  bool late_ = false;  // this rank answered after a poster's deadline: the others decided without it
  Deadline deadline_{};
  std::vector<std::optional<RankView>> views_;
  std::optional<FaultVerdict> verdict_;
};

// The side channel of ranks as threads: every post is delivered at once to the other ranks'
// agreements, on the posting thread.
class ThreadFaultBoard final : public FaultChannel {
 public:
  explicit ThreadFaultBoard(int n) : agreements_(n) {}
  void attach(int rank, std::shared_ptr<FaultAgreement> agreement);
  void post(int from, const std::string& view) override;

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<FaultAgreement>> agreements_;
};

}  // namespace tz
