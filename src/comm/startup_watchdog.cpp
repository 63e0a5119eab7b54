// The start-up deadline (startup_watchdog.hpp).
#include "comm/startup_watchdog.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace tz {
namespace {

// The launcher's rank before MPI knows it ("?" when no launcher variable says).
const char* launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return v;
  return "?";
}

}  // namespace

StartupWatchdog::StartupWatchdog(double timeout_s) {
  thread_ = std::thread([this, timeout_s] {
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return done_; })) return;
    fmt::print(stderr,
               "tierzero: rank {}: communication error: start-up did not complete within {} s (MPI_Init and "
               "the first exchange with every rank): a rank was stopped or lost before or during start-up "
               "(--startup-timeout)\n",
               launcher_rank(), timeout_s);
    std::fflush(stderr);
    std::_Exit(3);  // the CLI's exit code of a communication failure
  });
}

StartupWatchdog::~StartupWatchdog() {
  done();
}

void StartupWatchdog::done() {
  {
    std::lock_guard lock(mu_);
    if (done_ && !thread_.joinable()) return;
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tz
