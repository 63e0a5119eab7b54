#include "checkpoint/agreed_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace tz {
namespace {

enum Status : std::int32_t {
  working = 0,
  done = 1,
  failed_input = 2,
  failed_training = 3,
  failed_internal = 4,
  timed_out = 5
};
constexpr std::size_t kMessageBytes = 1024;

// What the worker thread and the calling thread share; the worker may outlive the call (timeout).
struct TaskState {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  Status status = working;
  std::string message;
};

void run_task(const std::shared_ptr<TaskState>& st, const std::function<void()>& task) {
  Status status = done;
  std::string message;
  try {
    task();
  } catch (const InputError& e) {
    status = failed_input, message = e.what();
  } catch (const TrainingError& e) {
    status = failed_training, message = e.what();
  } catch (const std::exception& e) {
    status = failed_internal, message = e.what();
  } catch (...) {
    status = failed_internal, message = "an exception that is not a std::exception";
  }
  {
    std::lock_guard lock(st->mu);
    st->finished = true;
    st->status = status;
    st->message = std::move(message);
  }
  st->cv.notify_all();
}

}  // namespace

void run_agreed_io(Communicator& comm, const AgreedIoOptions& options, const std::function<void()>& task) {
  using Clock = std::chrono::steady_clock;
  const int world = comm.size();
  auto st = std::make_shared<TaskState>();
  // The task is copied into the thread, which keeps `st` alive if it is abandoned.
  std::thread worker([st, task] { run_task(st, task); });
  const auto t0 = Clock::now();
  std::vector<std::int32_t> statuses(static_cast<std::size_t>(world));
  // Joins the worker if it finished, else abandons it (also when a round's collective throws).
  auto release_worker = [&] {
    if (!worker.joinable()) return;
    bool finished;
    {
      std::lock_guard lock(st->mu);
      finished = st->finished;
    }
    if (finished)
      worker.join();
    else
      worker.detach();
  };
  try {
    for (;;) {
      const double elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
      const double interval_s = std::clamp(0.05 * elapsed_s, 1e-3, 0.25);
      std::int32_t mine;
      {
        std::unique_lock lock(st->mu);
        st->cv.wait_for(lock, std::chrono::duration<double>(interval_s), [&] { return st->finished; });
        mine = st->finished ? st->status : working;
      }
      if (mine == working && std::chrono::duration<double>(Clock::now() - t0).count() > options.timeout_s)
        mine = timed_out;
      comm.all_gather(&mine, statuses.data(), sizeof mine, DType::u8).wait();
      const bool all_finished = std::all_of(statuses.begin(), statuses.end(),
                                            [](std::int32_t s) { return s != working && s != timed_out; });
      const bool any_timeout =
          std::any_of(statuses.begin(), statuses.end(), [](std::int32_t s) { return s == timed_out; });
      if (all_finished || any_timeout) break;
    }
  } catch (...) {
    release_worker();
    throw;
  }
  release_worker();
  if (std::all_of(statuses.begin(), statuses.end(), [](std::int32_t s) { return s == done; })) return;

  std::vector<int> late;
  for (int r = 0; r < world; ++r)
    if (statuses[r] == timed_out || statuses[r] == working) late.push_back(r);
  if (!late.empty())
    throw CommError(fmt::format("{} timed out after {} s; not finished: world rank(s) {{{}}}", options.what,
                                options.timeout_s, fmt::join(late, ", ")));

  // Everyone learns the first failure's message and type.
  std::vector<char> mine(kMessageBytes, '\0'), all(kMessageBytes * static_cast<std::size_t>(world));
  {
    std::lock_guard lock(st->mu);
    std::memcpy(mine.data(), st->message.data(), std::min(st->message.size(), kMessageBytes - 1));
  }
  comm.all_gather(mine.data(), all.data(), kMessageBytes, DType::u8).wait();
  int first = -1, count = 0;
  for (int r = 0; r < world; ++r)
    if (statuses[r] != done) {
      if (first < 0) first = r;
      ++count;
    }
  std::string msg(all.data() + static_cast<std::size_t>(first) * kMessageBytes);
  if (world > 1) msg = fmt::format("rank {}: {}", first, msg);
  if (count > 1) msg += fmt::format(" (and {} more rank(s) failed)", count - 1);
  switch (statuses[first]) {
    case failed_input:
      throw InputError(msg);
    case failed_training:
      throw TrainingError(msg);
    default:
      throw InternalError(msg);
  }
}

}  // namespace tz
