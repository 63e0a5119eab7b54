#include "core/cpu_features.hpp"

#include <fstream>
#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tz {
namespace {

#if defined(__x86_64__)
bool bit(unsigned reg, int b) {
  return (reg >> b) & 1u;
}

// The XCR0 register: which register states the operating system saves (XMM/YMM, and opmask/ZMM).
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures probe() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27);
  const unsigned long long x = osxsave ? xcr0() : 0;
  const bool ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;
  f.sse42 = bit(c, 20);
  f.avx = bit(c, 28) && ymm;
  f.f16c = bit(c, 29) && ymm;
  f.fma = bit(c, 12) && ymm;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = bit(b, 5) && ymm;
    f.avx512f = bit(b, 16) && zmm;
    f.avx512dq = bit(b, 17) && zmm;
    f.avx512cd = bit(b, 28) && zmm;
    f.avx512bw = bit(b, 30) && zmm;
    f.avx512vl = bit(b, 31) && zmm;
    f.avx512vnni = bit(c, 11) && zmm;
    f.avx512fp16 = bit(d, 23) && zmm;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avxvnni = bit(a, 4) && ymm;
    f.avx512bf16 = bit(a, 5) && zmm;
  }
  return f;
}
#else
CpuFeatures probe() {
  return {};
}
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = probe();
  return f;
}

std::string cpu_description() {
  std::string out = "cpu:";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      out += line.substr(line.find(':') + 1) + ";";
      break;
    }
  out += " vector extensions:";
  const CpuFeatures& f = cpu_features();
  const std::pair<const char*, bool> flags[] = {{"sse4.2", f.sse42},
                                                {"avx", f.avx},
                                                {"f16c", f.f16c},
                                                {"fma", f.fma},
                                                {"avx2", f.avx2},
                                                {"avxvnni", f.avxvnni},
                                                {"avx512f", f.avx512f},
                                                {"avx512dq", f.avx512dq},
                                                {"avx512cd", f.avx512cd},
                                                {"avx512bw", f.avx512bw},
                                                {"avx512vl", f.avx512vl},
                                                {"avx512vnni", f.avx512vnni},
                                                {"avx512bf16", f.avx512bf16},
                                                {"avx512fp16", f.avx512fp16}};
  bool any = false;
  for (const auto& [name, have] : flags)
    if (have) {
      out += std::string(" ") + name;
      any = true;
    }
  if (!any) out += " none probed";
  return out;
}

}  // namespace tz
