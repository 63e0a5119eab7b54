// The peak a rank's MFU is measured against: this rank's fp32 matrix-product rate on the backend the
// engine computes on (--device), measured at start-up through that backend's kernel table (the
// model's matmul_forward: tierzero's GEMM with the rank's kernel threads on the CPU, 512 x 1024 x
// 1024; cuBLAS on a GPU, 4096^3), best of a few calls within about 0.3 s. Every rank measures at the
// same time, so ranks that share cores (or a GPU) each measure their share.
#pragma once

#include <string>

#include "device/backend.hpp"

namespace tz::cli {

struct PeakRate {
  double flops_per_s = 0;  // per rank
  std::string source;      // how it was found, for the log
};

double measure_sgemm_gflops(DeviceKind device, int threads, double seconds = 0.3);

}  // namespace tz::cli
