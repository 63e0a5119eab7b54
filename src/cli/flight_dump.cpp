// Flight-recorder dumps on failure and on signals (flight_dump.hpp).
#include "cli/flight_dump.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace tz::cli {
namespace {

struct Registered {
  std::shared_ptr<FlightRecorder> recorder;
  std::string path;
};

std::mutex g_mu;
std::vector<Registered> g_registered;
int g_request[2] = {-1, -1};  // handler -> dumper: one byte, the signal number
int g_done[2] = {-1, -1};     // dumper -> fatal handler: one byte when the dump is written

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  if (write(g_request[1], &b, 1) < 0) {
  }  // nothing to do about it in a signal handler
  if (sig != SIGUSR1) {
    pollfd p{g_done[0], POLLIN, 0};
    poll(&p, 1, 3000);  // the dumper writes every file, or we give up
    signal(sig, SIG_DFL);
    raise(sig);
  }
  errno = saved;
}

void dumper() {
  for (;;) {
    unsigned char b = 0;
    const ssize_t n = read(g_request[0], &b, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const int sig = b;
    dump_all_flight_recorders(sig == SIGUSR1 ? std::string("SIGUSR1 (a dump on request)")
                                             : fmt::format("fatal signal {} ({})", sig, strsignal(sig)));
    if (sig != SIGUSR1) {
      const unsigned char d = 1;
      if (write(g_done[1], &d, 1) < 0) {
      }
    }
  }
}

}  // namespace

void register_flight_recorder(const std::shared_ptr<FlightRecorder>& recorder, const std::string& path) {
  std::lock_guard lock(g_mu);
  g_registered.push_back({recorder, path});
}

void unregister_flight_recorder(const FlightRecorder* recorder) {
  std::lock_guard lock(g_mu);
  std::erase_if(g_registered, [&](const Registered& r) { return r.recorder.get() == recorder; });
}

void dump_flight_recorder(const FlightRecorder& recorder, const std::string& path,
                          const std::string& reason) {
  try {
    recorder.dump(path, reason);
    fmt::print(stderr, "tierzero: rank {}: flight recorder written to {}\n", recorder.world_rank(), path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tierzero: rank {}: {}\n", recorder.world_rank(), e.what());
  }
  std::fflush(stderr);
}

void dump_all_flight_recorders(const std::string& reason) {
  std::vector<Registered> all;
  {
    std::lock_guard lock(g_mu);
    all = g_registered;
  }
  for (const Registered& r : all) dump_flight_recorder(*r.recorder, r.path, reason);
}

void install_flight_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (pipe(g_request) != 0 || pipe(g_done) != 0) {
      fmt::print(stderr, "tierzero: no flight-recorder signal handling: pipe failed: {}\n",
                 std::strerror(errno));
      return;
    }
    std::thread(dumper).detach();  // lives as long as the process; blocked in read() when idle
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, nullptr);
    sa.sa_flags = SA_RESETHAND;  // a second fault while dumping takes the default action
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
  });
}

}  // namespace tz::cli
