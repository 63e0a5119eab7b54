// Every option of every subcommand is declared with its kind and range (cli/cli_options.hpp), and
// every one refuses values outside it: table-driven over option_rules(), each option fed values
// below and above its range, NaN, infinities, overflow, non-numbers and empty text. Each must fail
// with exit code 2 and one line naming the option and the value, before anything runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cli/cli_main.hpp"
#include "cli/cli_options.hpp"
#include "cli_test_util.hpp"

namespace tz {
namespace {

using cli::OptionKind;
using cli::OptionRule;

std::vector<OptionRule> all_rules() {
  CLI::App app;
  cli::build_app(app);
  return cli::option_rules();
}

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e18) return std::to_string(static_cast<long long>(v));
  return fmt::format("{}", v);
}

// Values the rule must refuse.
std::vector<std::string> bad_values(const OptionRule& r) {
  std::vector<std::string> v;
  switch (r.kind) {
    case OptionKind::integer:
      if (r.min > -9e18) v.push_back(number(r.min - 1));
      if (r.max < 9e18) v.push_back(number(r.max + 1));
      for (const char* s : {"nan", "inf", "-inf", "1e3", "1.5", "abc", "99999999999999999999999", ""})
        v.push_back(s);
      break;
    case OptionKind::real:
      v.push_back(number(r.min_exclusive ? r.min : r.min - 1));
      v.push_back(number(r.max * 10 + 1));
      for (const char* s : {"nan", "inf", "-inf", "1e400", "abc", ""}) v.push_back(s);
      break;
    case OptionKind::size_bytes:
      if (r.min >= 1) v.push_back("0");
      v.push_back(number(r.max + 1));
      for (const char* s : {"-1", "1Q", "1.5M", "99999999999999999999T", "nan", ""}) v.push_back(s);
      break;
    case OptionKind::choice:
      v.push_back("no-such-choice");
      v.push_back("");
      break;
    case OptionKind::text:
      v.push_back("");
      break;
    case OptionKind::flag:
      break;
  }
  return v;
}

TEST(OptionRanges, EveryOptionOfEveryCommandIsDeclaredWithARange) {
  CLI::App app;
  cli::build_app(app);
  std::set<std::pair<std::string, std::string>> declared;
  for (const auto& r : cli::option_rules()) declared.insert({r.command, r.name});
  // Walk the app: every option except --help must have come through an OptionSet.
  std::function<void(CLI::App*, const std::string&)> walk = [&](CLI::App* a, const std::string& path) {
    for (CLI::Option* opt : a->get_options()) {
      if (opt->get_name() == "--help" || opt->get_name() == "-h,--help") continue;
      const std::string name = opt->get_lnames().empty() ? opt->get_name() : "--" + opt->get_lnames().front();
      if (path.empty()) continue;  // the top level has only --help
      EXPECT_TRUE(declared.count({path, name}))
          << path << " " << name << " is not declared through OptionSet";
      if (opt->get_items_expected_max() > 0 && !opt->get_required()) {
        EXPECT_FALSE(opt->get_default_str().empty()) << path << " " << name << ": --help shows no default";
      }
    }
    for (CLI::App* sub : a->get_subcommands({}))
      walk(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name());
  };
  walk(&app, "");
  EXPECT_GT(declared.size(), 80u);
}

TEST(OptionRanges, EveryOptionRefusesValuesOutsideItsRange) {
  int cases = 0;
  for (const OptionRule& r : all_rules()) {
    const bool positional = r.name.rfind("-", 0) != 0;
    for (const std::string& value : bad_values(r)) {
      std::vector<std::string> args = test::words(r.command);
      if (positional)
        args.push_back(value);
      else
        args.push_back(r.name + "=" + value);
      if (positional && value.empty()) continue;  // an empty positional is no argument at all
      SCOPED_TRACE(r.command + " " + (positional ? value : r.name + "=" + value));
      const test::CliResult res = test::run_cli(args);
      EXPECT_EQ(res.code, 2) << res.err;
      EXPECT_NE(res.err.find(r.name), std::string::npos) << res.err;
      // An empty value is quoted as "" (or, for CLI11, a value "missing").
      if (value.empty())
        EXPECT_TRUE(res.err.find("\"\"") != std::string::npos || res.err.find("missing") != std::string::npos)
            << res.err;
      else
        EXPECT_NE(res.err.find(value.substr(0, 40)), std::string::npos) << res.err;
      EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << res.err;
      EXPECT_TRUE(res.out.empty()) << res.out;
      ++cases;
    }
  }
  EXPECT_GT(cases, 400);
}

TEST(OptionRanges, ParsersAreExact) {
  EXPECT_EQ(cli::parse_integer("--n", "-7", -10, 10), -7);
  EXPECT_THROW(cli::parse_integer("--n", "+7", -10, 10), CLI::ValidationError);
  EXPECT_THROW(cli::parse_integer("--n", " 7", -10, 10), CLI::ValidationError);
  EXPECT_THROW(cli::parse_integer("--n", "7 ", -10, 10), CLI::ValidationError);
  EXPECT_EQ(cli::parse_unsigned("--seed", "18446744073709551615", UINT64_MAX), UINT64_MAX);
  EXPECT_THROW(cli::parse_unsigned("--seed", "18446744073709551616", UINT64_MAX), CLI::ValidationError);
  EXPECT_DOUBLE_EQ(cli::parse_real("--x", "1e-3", 0, 1, true), 1e-3);
  EXPECT_THROW(cli::parse_real("--x", "0", 0, 1, true), CLI::ValidationError);
  EXPECT_DOUBLE_EQ(cli::parse_real("--x", "0", 0, 1, false), 0.0);
  EXPECT_EQ(cli::parse_size_bytes("--b", "4096", 1, 1ull << 40), 4096u);
  EXPECT_EQ(cli::parse_size_bytes("--b", "64K", 1, 1ull << 40), 64u << 10);
  EXPECT_EQ(cli::parse_size_bytes("--b", "64M", 1, 1ull << 40), 64u << 20);
  EXPECT_EQ(cli::parse_size_bytes("--b", "2G", 1, 1ull << 40), 2ull << 30);
  EXPECT_EQ(cli::parse_size_bytes("--b", "1T", 1, 1ull << 40), 1ull << 40);
  EXPECT_EQ(cli::parse_size_bytes("--b", "16MiB", 1, 1ull << 40), 16u << 20);
  EXPECT_THROW(cli::parse_size_bytes("--b", "2T", 1, 1ull << 40), CLI::ValidationError);
  EXPECT_THROW(cli::parse_size_bytes("--b", "18446744073709551615K", 1, UINT64_MAX), CLI::ValidationError);
  EXPECT_EQ(cli::size_text(64u << 20), "64M");
  EXPECT_EQ(cli::size_text(1000), "1000");
}

}  // namespace
}  // namespace tz
