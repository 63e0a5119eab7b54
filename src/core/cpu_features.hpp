// The CPU's vector extensions, probed once at run time (cpuid, and xgetbv for the operating system's
// support of the wider registers), so kernels pick their path on the machine that runs them, and
// every benchmark prints the same line. Machines differ: some have AVX-512, some AVX2 only.
#pragma once

#include <string>

namespace tz {

struct CpuFeatures {
  bool sse42 = false, avx = false, f16c = false, fma = false, avx2 = false, avxvnni = false;
  bool avx512f = false, avx512dq = false, avx512cd = false, avx512bw = false, avx512vl = false;
  bool avx512vnni = false, avx512bf16 = false, avx512fp16 = false;
};

const CpuFeatures& cpu_features();

// "cpu: <model name>; vector extensions: sse4.2 avx ... avx512bf16" (the probed ones only).
std::string cpu_description();

}  // namespace tz
