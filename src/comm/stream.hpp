// An in-order queue of collectives (comm-internal), like a NCCL/CUDA stream. Tasks run one at a
// time, in issue order, either on the stream's own progress thread or on a thread that waits for one
// of its Works ("wait helps"): a caller that issues a collective and waits for it at once runs it
// itself, saving two thread hand-offs (each one can cost a scheduler time slice when ranks are
// oversubscribed), while a caller that goes on computing leaves it to the progress thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tz {

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void enqueue(std::function<void()> task);
  // Runs the next task on the calling thread when none is running; false if it could not.
  bool try_run_one();
  // Runs what is queued, then stops the progress thread. Idempotent.
  void shutdown();

 private:
  void progress_loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tz
