// The positional arguments of the benchmark programs in bench/ (tz_quant_bench, tz_optim_bench).
#pragma once

namespace tz {

// `text` as a whole decimal number in [1, max]; otherwise prints "<program>: <name> must be a whole
// number in [1, max], got '<text>'" to stderr and exits with status 2 (a benchmark has no caller to
// hand an error to, and a clamped or defaulted size would time something else than was asked).
long long bench_int_arg(const char* program, const char* text, const char* name, long long max);

}  // namespace tz
