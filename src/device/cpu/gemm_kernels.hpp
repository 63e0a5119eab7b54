// The micro-kernels behind gemm (gemm.cpp): each computes one MR x NR tile of C from a packed panel of
// op(A) (kc steps of MR values: Ap[k * MR + i]) and one of op(B) (kc steps of NR values: Bp[k * NR + j]),
// keeping the MR x NR sums in vector registers, then writes the m x n corner that lies inside C:
//   C[i, j] = alpha sum_k Ap[k, i] Bp[k, j] + beta C[i, j] (C not read when beta == 0) + bias[j]
// Panels are zero-padded to MR and NR, so edge tiles run the same loop. Internal to the model layer.
#pragma once

namespace tz::gemm_detail {

struct Tile {
  float* C;
  long ldc;
  int m, n;  // rows and columns of the tile inside C (<= MR, <= NR)
  float alpha, beta;
  const float* bias;  // (n) or null
};

using TileFn = void (*)(int kc, const float* Ap, const float* Bp, const Tile& t);

struct Kernel {
  int mr, nr;
  TileFn tile;
};

Kernel portable_kernel();  // 4 x 16, plain C++ (the compiler vectorizes it for baseline x86-64)
Kernel avx2_kernel();      // 6 x 16, AVX2 + FMA: 12 accumulators of 8 floats
Kernel avx512_kernel();    // 12 x 32, AVX-512F: 24 accumulators of 16 floats

}  // namespace tz::gemm_detail
