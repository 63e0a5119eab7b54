// The peak a rank's MFU is measured against when the engine computes on the CPU: this rank's sgemm
// rate, measured at start-up with its own kernel threads on a 512 x 1024 x 1024 product (the model's
// matmul_forward, OpenBLAS), best of a few calls within about 0.3 s. Every rank measures at the
// same time, so ranks that share cores each measure their share.
#pragma once

#include <string>

namespace tz::cli {

struct PeakRate {
  double flops_per_s = 0;  // per rank
  std::string source;      // how it was found, for the log
};

double measure_sgemm_gflops(int threads, double seconds = 0.3);

}  // namespace tz::cli
