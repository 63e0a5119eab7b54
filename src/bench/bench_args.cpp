#include "bench/bench_args.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace tz {

long long bench_int_arg(const char* program, const char* text, const char* name, long long max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < 1 || v > max) {
    fmt::print(stderr, "{}: {} must be a whole number in [1, {}], got '{}'\n", program, name, max, text);
    std::exit(2);
  }
  return v;
}

}  // namespace tz
