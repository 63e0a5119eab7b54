// In-order task queue with a progress thread and waiting threads that help (stream.hpp).
#include "device/stream.hpp"

#include "core/cpu_terms.hpp"

namespace tz {

Stream::Stream(StreamProgress progress) {
  if (progress == StreamProgress::own_thread) thread_ = std::thread([this] { progress_loop(); });
}

Stream::~Stream() {
  shutdown();
}

std::uint64_t Stream::enqueue(std::function<void()> task) {
  // The task's CPU time is the issuing rank's, whichever thread runs it (core/cpu_terms.hpp).
  if (const CpuContext issuer = capture_cpu_context(); issuer.counters != nullptr)
    task = [counters = issuer.counters->weak_from_this().lock(), run = std::move(task)] {
      const CpuCountersBinding bound(counters.get(), CpuTerm::other);
      run();
    };
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    ticket = ++last_ticket_;
    queue_.push_back(Task{ticket, std::move(task)});
  }
  cv_.notify_all();
  return ticket;
}

bool Stream::try_run_one(std::uint64_t up_to) {
  std::function<void()> task;
  {
    std::lock_guard lock(mu_);
    if (running_ || queue_.empty() || queue_.front().ticket > up_to) return false;
    task = std::move(queue_.front().run);
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
  while (try_run_one(~std::uint64_t{0})) {
  }  // callers_only: what is still queued
}

void Stream::progress_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return (stop_ && !running_) || (!queue_.empty() && !running_); });
    if (queue_.empty()) return;  // stopping, and nothing is left
    std::function<void()> task = std::move(queue_.front().run);
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
