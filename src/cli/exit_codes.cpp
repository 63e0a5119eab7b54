#include "cli/exit_codes.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <system_error>

#include "core/error.hpp"
#include "train/stop_request.hpp"

namespace tz::cli {

ExitReport report_current_exception() {
  try {
    throw;
  } catch (const InputError& e) {
    return {kExitBadInput, fmt::format("error: {}", e.what())};
  } catch (const CommError& e) {
    return {kExitComm, fmt::format("communication error: {}", e.what())};
  } catch (const StopRequested& e) {
    return {kExitStopRequested, e.what()};
  } catch (const std::system_error& e) {
    // fmt::print throws this when a write to a FILE fails; tierzero prints only to stdout and stderr.
    if (std::ferror(stdout))
      return {kExitBadInput,
              fmt::format("error: writing the standard output failed: {}", e.code().message())};
    return {kExitInternal, fmt::format("internal error: {}", e.what())};
  } catch (const TrainingError& e) {
    return {kExitStopped, e.what()};
  } catch (const std::exception& e) {
    return {kExitInternal, fmt::format("internal error: {}", e.what())};
  } catch (...) {
    return {kExitInternal, "internal error: an exception that is not a std::exception"};
  }
}

int print_exit_report(const ExitReport& report) {
  fmt::print(stderr, "tierzero: {}\n", report.message);
  std::fflush(stderr);
  return report.code;
}

}  // namespace tz::cli
