// The cpuid probe against what the kernel reports in /proc/cpuinfo's flags (Linux names), for every
// extension both know: they must agree (the kernel hides what the OS does not enable, as xgetbv does).
#include "core/cpu_features.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace tz {
namespace {

TEST(CpuFeatures, AgreeWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this system";
  const CpuFeatures& f = cpu_features();
  const std::pair<const char*, bool> known[] = {{"sse4_2", f.sse42},
                                                {"avx", f.avx},
                                                {"f16c", f.f16c},
                                                {"fma", f.fma},
                                                {"avx2", f.avx2},
                                                {"avx_vnni", f.avxvnni},
                                                {"avx512f", f.avx512f},
                                                {"avx512dq", f.avx512dq},
                                                {"avx512cd", f.avx512cd},
                                                {"avx512bw", f.avx512bw},
                                                {"avx512vl", f.avx512vl},
                                                {"avx512_vnni", f.avx512vnni},
                                                {"avx512_bf16", f.avx512bf16},
                                                {"avx512_fp16", f.avx512fp16}};
  for (const auto& [name, have] : known) EXPECT_EQ(have, flags.count(name) == 1) << name;
  EXPECT_NE(cpu_description().find("vector extensions:"), std::string::npos);
}

}  // namespace
}  // namespace tz
