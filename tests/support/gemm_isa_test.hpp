// A test parameterised by the gemm instruction set (portable, AVX2, AVX-512): each case runs with that
// set's kernels (skipped where this CPU cannot run it) and puts back the kernels and one kernel thread
// after. kEveryGemmIsa and gemm_isa_case_name instantiate it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "device/cpu/gemm.hpp"
#include "model/kernel_threads.hpp"

namespace tz::test {

class GemmIsaTest : public ::testing::TestWithParam<GemmIsa> {
 protected:
  void SetUp() override {
    if (!gemm_isa_supported(GetParam())) GTEST_SKIP() << "this CPU cannot run " << gemm_isa_name(GetParam());
    saved_ = active_gemm_isa();
    set_gemm_isa(GetParam());
  }
  void TearDown() override {
    if (gemm_isa_supported(GetParam())) set_gemm_isa(saved_);
    set_kernel_threads(1);
  }

 private:
  GemmIsa saved_ = GemmIsa::portable;
};

inline const auto kEveryGemmIsa = ::testing::Values(GemmIsa::portable, GemmIsa::avx2, GemmIsa::avx512);

inline std::string gemm_isa_case_name(const ::testing::TestParamInfo<GemmIsa>& info) {
  return std::string(gemm_isa_name(info.param));
}

}  // namespace tz::test
