// The shared state behind a Work handle (for the code that completes and chains Works: streams,
// communicators): whatever runs the work (a communicator's progress thread, a stream's task) finishes
// it with success or an exception; any number of Work copies wait on it. `keep_alive` holds
// buffers that must outlive the collective (Mesh's intermediate shards).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "device/stream.hpp"
#include "device/work.hpp"

namespace tz {

struct Work::State {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  std::vector<std::shared_ptr<void>> keep_alive;
  std::weak_ptr<Stream> stream;  // the stream that runs it: a waiter runs queued tasks itself
  std::uint64_t ticket = 0;      // its task's ticket there, set before the Work is handed out

  explicit State(std::weak_ptr<Stream> s = {}) : stream(std::move(s)) {}

  void finish(std::exception_ptr e);
  // Blocks until finished (running the stream's queued tasks up to its own meanwhile where no one
  // else is); returns the error (null on success) without throwing.
  std::exception_ptr wait_quietly();
};

// Keeps `buffer` alive until `work` is both complete and no longer referenced.
void attach_to_work(const Work& work, std::shared_ptr<void> buffer);
std::shared_ptr<Work::State> work_state(const Work& work);

}  // namespace tz
