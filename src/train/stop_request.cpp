#include "train/stop_request.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <csignal>
#include <cstring>

#include "core/error.hpp"

namespace tz {
namespace {

constinit StopFlag g_process_flag;  // constant-initialized: safe to touch from a handler at any time

void on_stop_signal(int signal_number) {
  StopFlag& flag = g_process_flag;
  if (flag.signal() != 0) {  // the second request: stop now
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  flag.request(signal_number);
}

}  // namespace

StopFlag& process_stop_flag() {
  return g_process_flag;
}

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking calls in flight go on; the flag is read at the step's end
  for (int s : {SIGINT, SIGTERM})
    if (sigaction(s, &action, nullptr) != 0)
      fail_input("cannot install the {} handler: {}", signal_name(s), std::strerror(errno));
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return fmt::format("signal {}", signal_number);
  }
}

StopDecision agree_stop(Communicator& world, const StopFlag& flag) {
  const std::int32_t mine = flag.signal();
  std::vector<std::int32_t> all(static_cast<std::size_t>(world.size()));
  world.all_gather(&mine, all.data(), sizeof(mine), DType::u8).wait();
  StopDecision d;
  for (int r = 0; r < world.size(); ++r) {
    if (all[r] == 0) continue;
    if (d.ranks.empty()) d.signal = all[r];
    d.ranks.push_back(r);
  }
  return d;
}

StopRequested::StopRequested(const StopDecision& d, int done, int total)
    : std::runtime_error(fmt::format(
          "stopped by {} (received by rank{} {}) after step {} of {}: every rank stopped at this step "
          "boundary",
          signal_name(d.signal), d.ranks.size() == 1 ? "" : "s", fmt::join(d.ranks, ","), done, total)),
      decision(d),
      steps_done(done) {}

}  // namespace tz
