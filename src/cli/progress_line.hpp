// Where and how a long run shows its progress: a bar with an ETA redrawn in place on a terminal, and
// the ETA in every plain log line. The terminal is this process's stderr when that is one; under
// mpirun rank 0's stderr is a pipe to the launcher, so the bar goes to the launcher's own stderr
// (/proc/<parent>/fd/2) when the launcher runs on this host with a terminal there (mpirun starts the
// ranks of its own host as its children).
#pragma once

#include <memory>
#include <string>

namespace tz::cli {

// "45s", "3m07s", "2h05m".
std::string format_eta(double seconds);

class ProgressBar {
 public:
  // The terminal to draw on, or null when there is none (then only the log lines carry the ETA).
  static std::unique_ptr<ProgressBar> open_terminal();
  ~ProgressBar();
  void draw(int done, int total, double elapsed_s);
  void clear();  // blanks the bar (before a log line is printed)

 private:
  explicit ProgressBar(int fd, bool owned) : fd_(fd), owned_(owned) {}
  void write(const std::string& text);
  int fd_;
  bool owned_;
};

}  // namespace tz::cli
