// An in-order queue of tasks (the engine of HostStream and of a communicator's progress), like a
// NCCL/CUDA stream. Tasks run one at a time, in issue order, on the stream's own progress thread. try_run_one
// lets a thread that waits for one task run the queue's next task itself (a caller that waits at once saves
// two thread hand-offs), but never a task enqueued after the one it waits for: each task has a ticket, and
// the waiter passes its own. Running a later task would hold the waiter hostage to that task's dependencies,
// which may sit behind the waiter on its own stream (a communicator's progress thread in a
// stream_wait that ran a dequantization waiting for a gather queued behind that stream_wait).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tz {

// Who runs the tasks: the stream's own progress thread (always, in the library), or only callers of
// try_run_one and shutdown (tests, which then decide every interleaving).
enum class StreamProgress { own_thread, callers_only };

class Stream {
 public:
  explicit Stream(StreamProgress progress = StreamProgress::own_thread);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `task`; returns its ticket (1, 2, ... in enqueue order).
  std::uint64_t enqueue(std::function<void()> task);
  // Runs the next task on the calling thread when none is running and its ticket is at most
  // `up_to`; false if it could not.
  bool try_run_one(std::uint64_t up_to);
  // Runs what is queued (on the calling thread when callers_only), then stops the progress thread.
  // Idempotent.
  void shutdown();

 private:
  void progress_loop();

  std::mutex mu_;
  std::condition_variable cv_;
  struct Task {
    std::uint64_t ticket;
    std::function<void()> run;
  };
  std::deque<Task> queue_;
  std::uint64_t last_ticket_ = 0;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tz
