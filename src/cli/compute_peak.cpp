#include "cli/compute_peak.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "device/device_buffer.hpp"
#include "device/kernels.hpp"
#include "model/kernel_threads.hpp"

namespace tz::cli {

double measure_sgemm_gflops(DeviceKind device, int threads, double seconds) {
  // A GPU finishes the CPU's product in microseconds, where launching and waiting would dominate:
  // 4096^3 there (137 GFLOP), the model's 512 x 1024 x 1024 on the CPU and the emulated device.
  const bool gpu = device == DeviceKind::cuda;
  const int N = gpu ? 4096 : 512, C = gpu ? 4096 : 1024, OC = gpu ? 4096 : 1024;
  Backend& dev = backend(device);
  DeviceBuffer<float> in(dev, static_cast<std::size_t>(N) * C), w(dev, static_cast<std::size_t>(OC) * C),
      out(dev, static_cast<std::size_t>(N) * OC);
  const std::vector<float> in_host(in.size(), 0.5f), w_host(w.size(), 0.25f);
  upload(in, std::span<const float>(in_host));
  upload(w, std::span<const float>(w_host));
  set_kernel_threads(threads);
  Kernels& k = dev.kernels();
  auto product = [&] {
    k.matmul_forward(out.data().address(), in.data().address(), w.data().address(), nullptr, N, C, OC);
  };
  product();  // warm caches, the thread pool, the GPU's library
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    product();  // an entry has finished when it returns, on every backend
    const auto t1 = std::chrono::steady_clock::now();
    best = std::max(best, 2.0 * N * C * OC / std::chrono::duration<double>(t1 - t0).count());
    if (std::chrono::duration<double>(t1 - start).count() > seconds && i >= 2) break;
  }
  return best / 1e9;
}

}  // namespace tz::cli
