#include "cli/compute_peak.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "device/cpu/layers.hpp"
#include "model/kernel_threads.hpp"

namespace tz::cli {

double measure_sgemm_gflops(int threads, double seconds) {
  constexpr int N = 512, C = 1024, OC = 1024;
  std::vector<float> in(static_cast<std::size_t>(N) * C, 0.5f), w(static_cast<std::size_t>(OC) * C, 0.25f),
      out(static_cast<std::size_t>(N) * OC);
  set_kernel_threads(threads);
  matmul_forward(out.data(), in.data(), w.data(), nullptr, N, C, OC);  // warm caches and the thread pool
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    matmul_forward(out.data(), in.data(), w.data(), nullptr, N, C, OC);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::max(best, 2.0 * N * C * OC / std::chrono::duration<double>(t1 - t0).count());
    if (std::chrono::duration<double>(t1 - start).count() > seconds && i >= 2) break;
  }
  return best / 1e9;
}

}  // namespace tz::cli
