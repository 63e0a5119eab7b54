// The start-up deadline: MPI_Init and the first exchange with every rank have no timeout of their
// own (Open MPI's MPI_Init waits for every rank of the job), so a rank stopped or lost before or
// during start-up would hang the others forever. A StartupWatchdog, made before MPI_Init, ends the
// process with one line and exit code 3 (a communication failure) when done() is not called within
// `timeout_s`; the launcher then tears the job down.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace tz {

class StartupWatchdog {
 public:
  explicit StartupWatchdog(double timeout_s);
  ~StartupWatchdog();  // done()
  StartupWatchdog(const StartupWatchdog&) = delete;
  StartupWatchdog& operator=(const StartupWatchdog&) = delete;

  void done();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace tz
