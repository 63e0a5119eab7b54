// Runs the tierzero command line in-process (cli/cli_main.hpp) and captures what it prints.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli_main.hpp"

namespace tz::test {

struct CliResult {
  int code = 0;
  std::string out, err;
};

inline CliResult run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "tierzero");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  CliResult r;
  r.code = cli::run_cli(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  std::fflush(stderr);
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

// "bench comm" -> {"bench", "comm"}
inline std::vector<std::string> words(const std::string& command) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= command.size()) {
    const std::size_t sp = command.find(' ', at);
    out.push_back(command.substr(at, sp == std::string::npos ? std::string::npos : sp - at));
    if (sp == std::string::npos) break;
    at = sp + 1;
  }
  return out;
}

}  // namespace tz::test
