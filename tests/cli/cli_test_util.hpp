// Runs the tierzero command line in-process (cli/cli_main.hpp) and captures what it prints.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
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

// A command line refused as bad input: one line naming what it should, exit code 2. Returns what it
// printed, for further checks.
struct RefusedRun {
  std::vector<std::string> args;
  std::vector<std::string> fragments;  // each must be in the error line
};
inline CliResult expect_refused(const RefusedRun& r) {
  std::string line;
  for (const auto& a : r.args) line += (line.empty() ? "" : " ") + a;
  SCOPED_TRACE(line);
  const CliResult res = run_cli(r.args);
  EXPECT_EQ(res.code, 2) << res.err;
  for (const auto& f : r.fragments) EXPECT_NE(res.err.find(f), std::string::npos) << res.err;
  EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << res.err;
  return res;
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
