// Work: the handle of something in flight (a collective, a task on a stream, a copy), like a CUDA
// event that a host thread can wait for and another queue can be ordered behind. wait() blocks until
// it is done (yielding, never spinning) and rethrows its failure: a CommError names the op, group,
// sequence number and missing ranks of a collective that failed or timed out. A default-constructed
// Work is an already-completed no-op. Copies share one state (device/work_state.hpp).
#pragma once

#include <memory>

namespace tz {

class Work {
 public:
  struct State;
  Work() = default;  // an already-completed no-op
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void wait();
  bool done() const;
  // Access to the shared state for the code that completes and chains Works (device/work_state.hpp).
  friend std::shared_ptr<State> work_state(const Work& work);

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tz
