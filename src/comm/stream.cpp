// In-order task queue with a progress thread and waiting threads that help (stream.hpp).
#include "comm/stream.hpp"

namespace tz {

Stream::Stream() : thread_([this] { progress_loop(); }) {}

Stream::~Stream() {
  shutdown();
}

void Stream::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
}

bool Stream::try_run_one() {
  std::function<void()> task;
  {
    std::lock_guard lock(mu_);
    if (running_ || queue_.empty()) return false;
    task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
  }
  task();
  {
    std::lock_guard lock(mu_);
    running_ = false;
  }
  cv_.notify_all();
  return true;
}

void Stream::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Stream::progress_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return (stop_ && !running_) || (!queue_.empty() && !running_); });
    if (queue_.empty()) return;  // stopping, and nothing is left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    task();
    lock.lock();
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace tz
