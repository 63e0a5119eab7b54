// How the CLI turns what a command throws into one line on stderr and an exit code, in one place:
//   0  success
//   1  the training run stopped (TrainingError: it diverged past the non-finite limit)
//   2  bad input (InputError: a key, option, file or value; the message names it),
//      or an output that cannot be written (a file tierzero writes, or the standard output it
//      prints a report or a --format json document to: the message names it and the system's reason)
//   3  a communication failure (CommError: a collective that failed or timed out)
//   4  an internal error (a broken invariant, or any other exception: a bug to report)
//   5  stopped on request: SIGINT or SIGTERM reached a rank of `train`, and every rank stopped at the
//      same step boundary (StopRequested; the line names the signal, the ranks and the step)
#pragma once

#include <exception>
#include <string>

namespace tz::cli {

constexpr int kExitOk = 0;
constexpr int kExitStopped = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitComm = 3;
constexpr int kExitInternal = 4;
constexpr int kExitStopRequested = 5;

struct ExitReport {
  int code = 0;
  std::string message;  // "error: ...", "communication error: ...", "internal error: ...", or the run's
};

// For the exception being handled (call inside a catch block).
ExitReport report_current_exception();

// Prints "tierzero: <message>" on stderr and returns the code (commands that run on no world).
int print_exit_report(const ExitReport& report);

}  // namespace tz::cli
