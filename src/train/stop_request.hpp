// Stopping a training run on request (SIGINT, SIGTERM) at a step boundary, every rank at the same
// step. Terms:
//   StopFlag      one rank's request: the number of the signal it received (0: none). A signal
//                 handler may set it (one lock-free atomic store); tests set it on one rank.
//   agree_stop    a collective over the world at the step boundary: every rank's flag is gathered
//                 (one int per rank, world x 4 bytes), so every rank sees the same flags and makes
//                 the same decision, even when only one rank was signalled (a scheduler that signals
//                 one process, a user who kills one pid).
//   StopRequested what the loop throws on every rank after the agreed step (its on_stop_requested
//                 hook has run first): the CLI turns it into one line and its own exit code.
// A signal received while a step runs is acted on when the step ends, so no rank is ever left
// inside a collective its peers abandoned; a second signal ends the process at once (the default
// action), for a step that never ends.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace tz {

class StopFlag {
 public:
  // Async-signal-safe: the first request's signal is kept.
  void request(int signal_number) noexcept {
    int none = 0;
    signal_.compare_exchange_strong(none, signal_number, std::memory_order_relaxed);
  }
  int signal() const noexcept { return signal_.load(std::memory_order_relaxed); }
  void clear() noexcept { signal_.store(0, std::memory_order_relaxed); }

 private:
  static_assert(std::atomic<int>::is_always_lock_free, "a signal handler stores into it");
  std::atomic<int> signal_{0};
};

// The flag of this process, which the handlers of install_stop_signal_handlers() set.
StopFlag& process_stop_flag();

// SIGINT and SIGTERM set process_stop_flag() (the first time; again, the process ends by the
// signal's default action). InputError if the handlers cannot be installed.
void install_stop_signal_handlers();

// "SIGTERM", "SIGINT", or "signal N".
std::string signal_name(int signal_number);

struct StopDecision {
  int signal = 0;          // the lowest-ranked request's signal; 0: go on
  std::vector<int> ranks;  // the world ranks that were asked to stop
  bool stop() const { return signal != 0; }
};

// Collective over `world`: the same decision on every rank.
StopDecision agree_stop(Communicator& world, const StopFlag& flag);

class StopRequested : public std::runtime_error {
 public:
  StopRequested(const StopDecision& decision, int steps_done, int steps_total);
  const StopDecision decision;
  const int steps_done;
};

}  // namespace tz
