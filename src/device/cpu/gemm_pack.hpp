// gemm's packing and micro-kernel for callers that pack an operand once and multiply it many times
// (attention packs a head's keys and values once and runs every query tile against them, where a call
// of gemm per tile would pack them again each time). The layouts are those of gemm_kernels.hpp:
//   op(A) in MR-high panels, panel p at dst + p * kc * MR, dst[k * MR + i] = op(A)[p MR + i, k]
//   op(B) in NR-wide panels, panel p at dst + p * kc * NR, dst[k * NR + j] = op(B)[k, p NR + j]
// zero-padded to whole panels. A panel's steps are contiguous, so steps k0 .. k0 + kc of a packed
// panel start at + k0 * MR (NR) and can be multiplied on their own. Buffers for op(B) must be aligned
// to 64 bytes (the kernels load B panels with aligned loads): AlignedFloats gives such buffers.
#pragma once

#include <cstddef>
#include <memory>

#include "device/cpu/gemm_kernels.hpp"

namespace tz::gemm_detail {

Kernel active_kernel();  // the micro-kernel gemm runs now (set_gemm_isa)

// op(A) = X (m x kc, row stride ld): MR-high panels of its rows (4 x 4 transposes).
void pack_a_rows(float* dst, const float* X, std::size_t ld, int m, int kc, int mr);
// op(A) = X^T, X kc x m (row stride ld): MR-high panels of its columns (plain copies).
void pack_a_cols(float* dst, const float* X, std::size_t ld, int m, int kc, int mr);
// op(B) = X (kc x n, row stride ld): NR-wide panels of its columns (plain copies).
void pack_b_rows(float* dst, const float* X, std::size_t ld, int kc, int n, int nr);
// op(B) = X^T, X n x kc (row stride ld): NR-wide panels of its rows (4 x 4 transposes).
void pack_b_cols(float* dst, const float* X, std::size_t ld, int kc, int n, int nr);

// Floats of a packed operand with `rows` rows in panels of `panel` and depth kc.
inline std::size_t packed_floats(int rows, int panel, int kc) {
  return static_cast<std::size_t>((rows + panel - 1) / panel) * panel * kc;
}

// A float buffer aligned to 64 bytes that only grows (kept per thread: no page faults per call).
class AlignedFloats {
 public:
  float* get(std::size_t n);

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace tz::gemm_detail
