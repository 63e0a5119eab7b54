// Error policy:
//  - tz::InputError: bad input from a user (config key, file, value). The message names the key, file,
//    rank and values; the CLI prints it on one line and exits non-zero.
//  - tz::CommError: a collective that failed or timed out; names the op, group, sequence number, ranks.
//  - tz::TrainingError: a run that cannot go on although its input was valid (it diverged: more
//    non-finite steps than allowed); names the step and the limit.
//  - tz::InternalError: a broken invariant (a bug), raised by the TZ_CHECK* macros with file and line.
// Library code never calls exit(); the CLI is the only place that turns errors into exit codes
// (cli/run_world.hpp: 1 training stopped, 2 bad input, 3 communication, 4 internal error).
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tz {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TrainingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Formats and throws an InputError: tz::fail_input("topology {}: key '{}' must be ...", file, key).
template <typename... Args>
[[noreturn]] void fail_input(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

namespace detail {
[[noreturn]] inline void check_failed(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("{}:{}: check failed: {}", file, line, what));
}
}  // namespace detail

}  // namespace tz

// Invariant checks: both values are printed on failure. Always on (they guard cheap conditions).
#define TZ_CHECK(cond, ...)                                                                            \
  do {                                                                                                 \
    if (!(cond))                                                                                       \
      ::tz::detail::check_failed(__FILE__, __LINE__, #cond " " __VA_OPT__(+fmt::format(__VA_ARGS__))); \
  } while (0)

#define TZ_CHECK_OP_(a, b, op)                                                                   \
  do {                                                                                           \
    const auto& tz_a_ = (a);                                                                     \
    const auto& tz_b_ = (b);                                                                     \
    if (!(tz_a_ op tz_b_))                                                                       \
      ::tz::detail::check_failed(__FILE__, __LINE__,                                             \
                                 fmt::format("{} {} {} ({} vs {})", #a, #op, #b, tz_a_, tz_b_)); \
  } while (0)

#define TZ_CHECK_EQ(a, b) TZ_CHECK_OP_(a, b, ==)
#define TZ_CHECK_NE(a, b) TZ_CHECK_OP_(a, b, !=)
#define TZ_CHECK_LT(a, b) TZ_CHECK_OP_(a, b, <)
#define TZ_CHECK_LE(a, b) TZ_CHECK_OP_(a, b, <=)
#define TZ_CHECK_GT(a, b) TZ_CHECK_OP_(a, b, >)
#define TZ_CHECK_GE(a, b) TZ_CHECK_OP_(a, b, >=)
