// AdamW throughput on one thread: the update and the non-finite count, on the AVX2 loop and the
// portable loop, as GB/s of the state they read and as a ratio to a memcpy of the same bytes in the
// same run (the loops are bound by memory once they are vectorised). After the CPU's vector
// extensions. The paths interleave, and each figure is the median of `reps` calls.
//   build/bench/tz_optim_bench [elements] [reps]     default 8 Mi elements (128 MiB of state), 9 reps
#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

#include "bench/bench_args.hpp"
#include "bench/quant_throughput.hpp"
#include "core/parallel_for.hpp"
#include "core/timing.hpp"
#include "device/cpu/adamw.hpp"

int main(int argc, char** argv) {
  if (argc > 3) {
    fmt::print(stderr, "usage: tz_optim_bench [elements] [reps]\n");
    return 2;
  }
  const std::size_t n =
      argc > 1 ? static_cast<std::size_t>(tz::bench_int_arg("tz_optim_bench", argv[1], "elements", 1LL << 30))
               : std::size_t{8} << 20;
  const int reps =
      argc > 2 ? static_cast<int>(tz::bench_int_arg("tz_optim_bench", argv[2], "reps", 1000)) : 9;
  try {
    fmt::print("{}\n", tz::cpu_vector_extensions());
    tz::set_parallel_threads(1);
    // A steady state: small gradients, positive v, so every element stays finite.
    std::vector<float> p(n, 0.5f), g(n, 1e-3f), m(n, 1e-4f), v(n, 1e-6f), dst(4 * n), src(4 * n, 1.0f);
    const tz::DecaySegment seg{.offset = 0, .numel = n, .decay = true};
    const tz::AdamWParams hp{};
    const bool avx2 = tz::adamw_detail::have_avx2();
    enum { kMemcpy, kUpdatePortable, kUpdateAvx2, kCountPortable, kCountAvx2, kCount };
    std::vector<std::vector<double>> t(kCount);
    std::size_t bad = 0;
    for (int r = 0; r < reps; ++r) {
      t[kMemcpy].push_back(
          tz::seconds_of([&] { std::memcpy(dst.data(), src.data(), 4 * n * sizeof(float)); }));
      for (bool portable : {true, false}) {
        if (!portable && !avx2) continue;
        tz::adamw_detail::force_portable(portable);
        t[portable ? kUpdatePortable : kUpdateAvx2].push_back(tz::seconds_of([&] {
          tz::adamw_update(p.data(), g.data(), m.data(), v.data(), {&seg, 1}, n, 3 + r, hp);
        }));
        t[portable ? kCountPortable : kCountAvx2].push_back(tz::seconds_of([&] {
          bad += tz::adamw_nonfinite_count(p.data(), g.data(), m.data(), v.data(), {&seg, 1}, n, 3 + r, hp);
        }));
      }
    }
    tz::adamw_detail::force_portable(false);
    if (bad != 0)
      throw std::runtime_error(fmt::format("the steady state counted {} non-finite elements", bad));
    // Each loop reads p, g, m, v (16 bytes per element); the update also writes p, m, v.
    const double bytes = 16.0 * double(n), memcpy_s = tz::median(t[kMemcpy]);
    fmt::print("{} elements, 1 thread, median of {}; memcpy of the 16 B/element read: {:.1f} GB/s\n", n, reps,
               bytes / memcpy_s / 1e9);
    fmt::print("{:<22}{:>10}{:>10}{:>12}\n", "loop", "ms", "GB/s", "x memcpy");
    const char* names[] = {"", "update portable", "update avx2", "count portable", "count avx2"};
    for (int k = kUpdatePortable; k < kCount; ++k) {
      if (t[k].empty()) {
        fmt::print("{:<22}skipped: this CPU has no AVX2\n", names[k]);
        continue;
      }
      const double s = tz::median(t[k]);
      fmt::print("{:<22}{:>10.2f}{:>10.1f}{:>12.2f}\n", names[k], s * 1e3, bytes / s / 1e9, memcpy_s / s);
    }
    if (avx2)
      fmt::print("avx2 / portable: update {:.2f}x, count {:.2f}x\n",
                 tz::median(t[kUpdatePortable]) / tz::median(t[kUpdateAvx2]),
                 tz::median(t[kCountPortable]) / tz::median(t[kCountAvx2]));
  } catch (const std::exception& e) {
    fmt::print(stderr, "tz_optim_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
