#include "cli/progress_line.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace tz::cli {

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long long t = std::llround(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
}

std::unique_ptr<ProgressBar> ProgressBar::open_terminal() {
  if (isatty(STDERR_FILENO)) return std::unique_ptr<ProgressBar>(new ProgressBar(STDERR_FILENO, false));
  const bool under_launcher = std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("PMIX_RANK");
  if (!under_launcher) return nullptr;
  const std::string parent_stderr = fmt::format("/proc/{}/fd/2", getppid());
  const int fd = ::open(parent_stderr.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  if (!isatty(fd)) {
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<ProgressBar>(new ProgressBar(fd, true));
}

ProgressBar::~ProgressBar() {
  if (owned_) ::close(fd_);
}

void ProgressBar::write(const std::string& text) {
  // A progress bar that cannot be drawn is not worth failing a run for: short writes are dropped.
  if (::write(fd_, text.data(), text.size()) < 0) return;
}

void ProgressBar::draw(int done, int total, double elapsed_s) {
  const int width = 30;
  const int filled = total > 0 ? width * done / total : width;
  const double eta = done > 0 ? elapsed_s / done * (total - done) : NAN;
  write(fmt::format("\r[{:=<{}}{: <{}}] {}/{} steps, ETA {} ", "", filled, "", width - filled, done, total,
                    format_eta(eta)) +
        (done == total ? "\n" : ""));
}

void ProgressBar::clear() {
  write(fmt::format("\r{:80}\r", ""));
}

}  // namespace tz::cli
