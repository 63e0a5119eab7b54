// Work handles: waiting blocks on a condition variable (no spinning); errors are rethrown to every
// waiter. The deadline lives in the progress thread that runs the collective, which always finishes
// the state (done or failed), so wait() needs none of its own.
#include "device/work_state.hpp"

namespace tz {

void Work::State::finish(std::exception_ptr e) {
  {
    std::lock_guard lock(mu);
    error = std::move(e);
    finished = true;
  }
  cv.notify_all();
}

std::exception_ptr Work::State::wait_quietly() {
  for (;;) {
    {
      std::lock_guard lock(mu);
      if (finished) return error;
    }
    std::shared_ptr<Stream> s = stream.lock();
    if (!s || !s->try_run_one(ticket)) break;  // the progress thread is on it (or it is gone): block
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return finished; });
  return error;
}

void Work::wait() {
  if (!state_) return;
  if (std::exception_ptr e = state_->wait_quietly()) std::rethrow_exception(e);
}

bool Work::done() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mu);
  return state_->finished;
}

std::shared_ptr<Work::State> work_state(const Work& work) {
  return work.state_;
}

void attach_to_work(const Work& work, std::shared_ptr<void> buffer) {
  auto state = work_state(work);
  if (!state) return;  // an already-completed no-op holds nothing
  std::lock_guard lock(state->mu);
  state->keep_alive.push_back(std::move(buffer));
}

}  // namespace tz
