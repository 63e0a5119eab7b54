// gemm: C = alpha op(A) op(B) + beta C + bias, blocked as in GotoBLAS / BLIS. Terms: MR x NR is the
// micro-kernel's register tile (gemm_kernels.hpp); KC the depth of one pass (panels of KC steps stay
// in L1 / L2); NC the width of one packed block of op(B).
// Steps, for each block of NC columns and each group of KC-deep slices (at most kPackFloats floats):
//   1. pack that part of op(B) into NR-wide panels (zero-padded), all threads together;
//   2. split the M rows into equal ranges, one per task (a multiple of MR rows each); each task packs
//      its rows of op(A) for one KC slice into MR-high panels (adding the row sums if asked), then runs
//      the micro-kernel over every (MR, NR) tile of its rows: C is read and written once per slice.
// Bytes: op(B) is read once and packed once; op(A) is read and packed once per NC block; C moves
// ceil(K / KC) times. An epilogue (gemm_args.hpp) runs on each task's block of C (at most kMc rows of
// kNc columns) right after its last slice, while the block is still in L2, row by row in long runs
// (per MR x NR tile, the operand's rows a whole row apart thrash the L1 sets and defeat the hardware
// prefetchers), so it costs no pass over memory for C. Every C element is
// summed by one task over the slices in order, so the result is the same for any thread count. Scratch
// buffers are kept per thread across calls.
#include "device/cpu/gemm.hpp"

#include <emmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>

#include "core/bf16.hpp"
#include "core/cpu_features.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/gemm_kernels.hpp"
#include "device/cpu/gemm_pack.hpp"
#include "device/cpu/layers.hpp"

namespace tz {
namespace gemm_detail {
namespace {

void tile_portable(int kc, const float* Ap, const float* Bp, const Tile& t) {
  constexpr int MR = 4, NR = 16;
  float acc[MR][NR] = {};
  for (int k = 0; k < kc; ++k, Ap += MR, Bp += NR)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += Ap[i] * Bp[j];
  for (int i = 0; i < t.m; ++i) {
    float* c = t.C + i * t.ldc;
    for (int j = 0; j < t.n; ++j) {
      float r = acc[i][j] * t.alpha + (t.bias ? t.bias[j] : 0.0f);
      c[j] = t.beta != 0.0f ? c[j] * t.beta + r : r;
    }
  }
}

}  // namespace

Kernel portable_kernel() {
  return {4, 16, tile_portable};
}

}  // namespace gemm_detail

namespace {

using gemm_detail::AlignedFloats;
using gemm_detail::Kernel;
using gemm_detail::Tile;

constexpr int kKc = 384;                       // depth of one slice
constexpr int kMc = 192;                       // most rows of one task (packed op(A) in L2)
constexpr int kPanelRun = 8;                   // B panels one packing piece covers
constexpr int kNc = 1024;                      // columns of one packed block (a multiple of every NR)
constexpr std::size_t kPackFloats = 2u << 20;  // packed op(B) per step 1 (8 MiB)

bool cpu_has(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::portable:
      return true;
    case GemmIsa::avx2:
      return cpu_features().avx2 && cpu_features().fma;
    case GemmIsa::avx512:
      return cpu_features().avx512f;
  }
  return false;
}

GemmIsa& active() {
  static GemmIsa isa = best_gemm_isa();
  return isa;
}

Kernel kernel_for(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::avx512:
      return gemm_detail::avx512_kernel();
    case GemmIsa::avx2:
      return gemm_detail::avx2_kernel();
    case GemmIsa::portable:
      break;
  }
  return gemm_detail::portable_kernel();
}

// One element of op(B) or op(A) as the kernels read it: fp32 as stored, bf16 widened (exact).
inline float widened(float x) {
  return x;
}
inline float widened(bf16 x) {
  return to_float(x);
}

// Four consecutive elements as fp32 lanes; bf16 bits go to the upper halves (SSE2: interleave with 0).
inline __m128 load4(const float* p) {
  return _mm_loadu_ps(p);
}
inline __m128 load4(const bf16* p) {
  const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
}

// Copies a strided R x kc block into the packed layout dst[k * R + r] = rows[r][k]: 4 rows and 4 steps
// at a time through an SSE 4 x 4 transpose, the rest one by one. rows[r] may repeat (edge panels).
template <int R, typename T>
void pack_transposed(float* dst, const T* const (&rows)[R], int kc) {
  int k = 0;
  if constexpr (R % 4 == 0) {
    for (; k + 4 <= kc; k += 4)
      for (int r = 0; r < R; r += 4) {
        __m128 a = load4(rows[r] + k), b = load4(rows[r + 1] + k), c = load4(rows[r + 2] + k),
               d = load4(rows[r + 3] + k);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        float* o = dst + static_cast<std::size_t>(k) * R + r;
        _mm_storeu_ps(o, a);
        _mm_storeu_ps(o + R, b);
        _mm_storeu_ps(o + 2 * R, c);
        _mm_storeu_ps(o + 3 * R, d);
      }
  }
  for (; k < kc; ++k)
    for (int r = 0; r < R; ++r) dst[static_cast<std::size_t>(k) * R + r] = widened(rows[r][k]);
}

// Copies kc rows of panels p0 .. p1 (R floats each, `count` of them in total from the first panel on,
// row stride ld) into panel p at dst + p * kc * R, dst[p][k * R + r]. Rows are read in long runs; each
// panel is written in order.
template <int R, typename T>
void pack_rows(float* dst, const T* src, std::size_t ld, int kc, int p0, int p1, int count) {
  for (int k = 0; k < kc; ++k, src += ld)
    for (int p = p0; p < p1; ++p) {
      const T* in = src + static_cast<std::size_t>(p) * R;
      float* out = dst + (static_cast<std::size_t>(p) * kc + k) * R;
      const int n = std::min(R, count - p * R);
      if (n == R) {
        if constexpr (std::is_same_v<T, float>) {
          std::memcpy(out, in, sizeof(float) * R);  // constant size: inlined vector moves
        } else {
          static_assert(R % 4 == 0);
          for (int r = 0; r < R; r += 4) _mm_storeu_ps(out + r, load4(in + r));
        }
      } else {
        for (int r = 0; r < R; ++r) out[r] = r < n ? widened(in[r]) : 0.0f;
      }
    }
}

// Zeroes entries r >= count of each of the kc packed rows of R.
template <int R>
void zero_tail(float* dst, int kc, int count) {
  if (count < R)
    for (int k = 0; k < kc; ++k)
      for (int r = count; r < R; ++r) dst[static_cast<std::size_t>(k) * R + r] = 0.0f;
}

// Panels p0 .. p1 of NR columns (from n0, nc columns in all) of op(B), rows k0 .. k0 + kc: panel p at
// Bs + p * kc * NR. NR and MR are template arguments so that whole-panel copies unroll.
template <int NR, typename T>
void pack_b_from(float* Bs, const T* B, const GemmArgs& g, int n0, int nc, int p0, int p1, int k0, int kc) {
  if (!g.trans_b)
    return pack_rows<NR>(Bs, B + static_cast<std::size_t>(k0) * g.ldb + n0, g.ldb, kc, p0, p1, nc);
  for (int p = p0; p < p1; ++p) {
    const int ncols = std::min(NR, nc - p * NR);
    const T* rows[NR];
    for (int j = 0; j < NR; ++j)
      rows[j] = B + static_cast<std::size_t>(n0 + p * NR + std::min(j, ncols - 1)) * g.ldb + k0;
    float* out = Bs + static_cast<std::size_t>(p) * kc * NR;
    pack_transposed<NR>(out, rows, kc);
    zero_tail<NR>(out, kc, ncols);
  }
}

template <int NR>
void pack_b_panels(float* Bs, const GemmArgs& g, int n0, int nc, int p0, int p1, int k0, int kc) {
  if (g.B16 != nullptr) return pack_b_from<NR>(Bs, g.B16, g, n0, nc, p0, p1, k0, kc);
  pack_b_from<NR>(Bs, g.B, g, n0, nc, p0, p1, k0, kc);
}

// Rows m0 .. m1 of op(A), steps k0 .. k0 + kc, as MR-high panels (panel i at Ap + i * kc * MR); adds
// the row sums if asked.
template <int MR>
void pack_a_block(float* Ap, const GemmArgs& g, int m0, int m1, int k0, int kc, float* row_sums) {
  const int panels = (m1 - m0 + MR - 1) / MR;
  if (g.trans_a) {
    pack_rows<MR>(Ap, g.A + static_cast<std::size_t>(k0) * g.lda + m0, g.lda, kc, 0, panels, m1 - m0);
  } else {
    for (int p = 0; p < panels; ++p) {
      const int mrows = std::min(MR, m1 - m0 - p * MR);
      const float* rows[MR];
      for (int i = 0; i < MR; ++i)
        rows[i] = g.A + static_cast<std::size_t>(m0 + p * MR + std::min(i, mrows - 1)) * g.lda + k0;
      float* out = Ap + static_cast<std::size_t>(p) * kc * MR;
      pack_transposed<MR>(out, rows, kc);
      zero_tail<MR>(out, kc, mrows);
    }
  }
  if (row_sums)
    for (int p = 0; p < panels; ++p) {
      const float* in = Ap + static_cast<std::size_t>(p) * kc * MR;
      float s[MR] = {};
      for (int k = 0; k < kc; ++k)
        for (int i = 0; i < MR; ++i) s[i] += in[static_cast<std::size_t>(k) * MR + i];
      for (int i = 0; i < MR && m0 + p * MR + i < m1; ++i) row_sums[m0 + p * MR + i] += s[i];
    }
}

using PackB = void (*)(float*, const GemmArgs&, int, int, int, int, int, int);
using PackA = void (*)(float*, const GemmArgs&, int, int, int, int, float*);

PackB pack_b_for(int NR) {
  TZ_CHECK(NR == 16 || NR == 32, "gemm: no packing for NR = {}", NR);
  return NR == 32 ? pack_b_panels<32> : pack_b_panels<16>;
}

PackA pack_a_for(int MR) {
  TZ_CHECK(MR == 4 || MR == 6 || MR == 12, "gemm: no packing for MR = {}", MR);
  return MR == 12 ? pack_a_block<12> : MR == 6 ? pack_a_block<6> : pack_a_block<4>;
}

void check_args(const GemmArgs& g) {
  TZ_CHECK(g.M >= 0 && g.N >= 0 && g.K >= 0, "gemm: negative size {} x {} x {}", g.M, g.N, g.K);
  TZ_CHECK_GE(g.ldc, g.N);
  TZ_CHECK_GE(g.lda, g.trans_a ? g.M : g.K);
  TZ_CHECK_GE(g.ldb, g.trans_b ? g.K : g.N);
  TZ_CHECK(g.B == nullptr || g.B16 == nullptr, "gemm: op(B) given both in fp32 and in bf16");
  switch (g.epilogue) {
    case GemmEpilogue::none:
      break;
    case GemmEpilogue::gelu_tanh:
    case GemmEpilogue::gelu_exact:
      TZ_CHECK(g.epi_out != nullptr, "gemm: an activation epilogue needs its output");
      TZ_CHECK_GE(g.ld_epi_out, g.N);
      break;
    case GemmEpilogue::gelu_tanh_grad:
    case GemmEpilogue::gelu_exact_grad:
    case GemmEpilogue::add:
      // C holds partial sums between slices, so the epilogue's input cannot be C itself.
      TZ_CHECK(g.epi_in != nullptr && g.epi_in != g.C,
               "gemm: the epilogue's input must be given, apart from C");
      TZ_CHECK_GE(g.ld_epi_in, g.N);
      break;
  }
}

// The epilogue on rows m0 .. m0 + m, columns n0 .. n0 + n of the finished C (serial: the caller owns
// those rows). The per-element arithmetic is the separate kernels' (layers.hpp), so fusing changes no bit.
void apply_epilogue(const GemmArgs& g, int m0, int m, int n0, int n) {
  for (int i = m0; i < m0 + m; ++i) {
    float* c = g.C + static_cast<std::size_t>(i) * g.ldc + n0;
    const float* in = g.epi_in ? g.epi_in + static_cast<std::size_t>(i) * g.ld_epi_in + n0 : nullptr;
    float* out = g.epi_out ? g.epi_out + static_cast<std::size_t>(i) * g.ld_epi_out + n0 : nullptr;
    switch (g.epilogue) {
      case GemmEpilogue::none:
        return;
      case GemmEpilogue::gelu_tanh:
        gelu_forward_serial(out, c, n);
        break;
      case GemmEpilogue::gelu_exact:
        gelu_exact_forward_serial(out, c, n);
        break;
      case GemmEpilogue::gelu_tanh_grad:
        gelu_backward_serial(c, in, c, n);
        break;
      case GemmEpilogue::gelu_exact_grad:
        gelu_exact_backward_serial(c, in, c, n);
        break;
      case GemmEpilogue::add:
        for (int j = 0; j < n; ++j) c[j] = c[j] + in[j];
        break;
    }
  }
}

// K == 0: C = beta C + bias.
void scale_only(const GemmArgs& g) {
  for (int i = 0; i < g.M; ++i) {
    float* c = g.C + static_cast<std::size_t>(i) * g.ldc;
    for (int j = 0; j < g.N; ++j)
      c[j] = (g.beta != 0.0f ? g.beta * c[j] : 0.0f) + (g.bias ? g.bias[j] : 0.0f);
  }
  apply_epilogue(g, 0, g.M, 0, g.N);
}

}  // namespace

std::string_view gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::portable:
      return "portable";
    case GemmIsa::avx2:
      return "avx2";
    case GemmIsa::avx512:
      return "avx512";
  }
  return "?";
}

bool gemm_isa_supported(GemmIsa isa) {
  return cpu_has(isa);
}

GemmIsa best_gemm_isa() {
  for (GemmIsa isa : {GemmIsa::avx512, GemmIsa::avx2})
    if (cpu_has(isa)) return isa;
  return GemmIsa::portable;
}

GemmIsa active_gemm_isa() {
  return active();
}

void set_gemm_isa(GemmIsa isa) {
  TZ_CHECK(cpu_has(isa), "gemm: this CPU cannot run the {} kernels", gemm_isa_name(isa));
  active() = isa;
}

namespace gemm_detail {

Kernel active_kernel() {
  return kernel_for(active());
}

void pack_a_rows(float* dst, const float* X, std::size_t ld, int m, int kc, int mr) {
  GemmArgs g{.A = X, .lda = static_cast<int>(ld)};
  pack_a_for(mr)(dst, g, 0, m, 0, kc, nullptr);
}

void pack_a_cols(float* dst, const float* X, std::size_t ld, int m, int kc, int mr) {
  GemmArgs g{.trans_a = true, .A = X, .lda = static_cast<int>(ld)};
  pack_a_for(mr)(dst, g, 0, m, 0, kc, nullptr);
}

void pack_b_rows(float* dst, const float* X, std::size_t ld, int kc, int n, int nr) {
  GemmArgs g{.B = X, .ldb = static_cast<int>(ld)};
  pack_b_for(nr)(dst, g, 0, n, 0, (n + nr - 1) / nr, 0, kc);
}

void pack_b_cols(float* dst, const float* X, std::size_t ld, int kc, int n, int nr) {
  GemmArgs g{.trans_b = true, .B = X, .ldb = static_cast<int>(ld)};
  pack_b_for(nr)(dst, g, 0, n, 0, (n + nr - 1) / nr, 0, kc);
}

float* AlignedFloats::get(std::size_t n) {
  if (n > size_) {
    data_.reset(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)));
    TZ_CHECK(data_ != nullptr, "gemm: cannot allocate {} floats of scratch", n);
    size_ = n;
  }
  return data_.get();
}

void AlignedFloats::Free::operator()(float* p) const {
  std::free(p);
}

}  // namespace gemm_detail

void gemm(const GemmArgs& g) {
  check_args(g);
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) return scale_only(g);
  const Kernel kern = kernel_for(active());
  const int MR = kern.mr, NR = kern.nr;
  const PackA pack_a = pack_a_for(MR);
  const PackB pack_b = pack_b_for(NR);
  // Row ranges: a multiple of MR rows each, at most kMc (their packed op(A) stays in L2), and about
  // 4 per thread so that a slower thread leaves little behind.
  const int threads = g.serial ? 1 : parallel_threads();
  auto run = [&](std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (g.serial)
      fn(0, n);
    else
      parallel_for(n, grain, fn);
  };
  const int m_panels = (g.M + MR - 1) / MR;
  const int tasks = std::max({1, (g.M + kMc - 1) / kMc, std::min(m_panels, threads == 1 ? 1 : 4 * threads)});
  const int task_rows = (m_panels + tasks - 1) / tasks * MR;
  const int ntasks = (g.M + task_rows - 1) / task_rows;

  thread_local AlignedFloats b_scratch;
  for (int n0 = 0; n0 < g.N; n0 += kNc) {
    const int nc = std::min(kNc, g.N - n0);
    const int n_panels = (nc + NR - 1) / NR, ncp = n_panels * NR;
    const int group_k = std::max(kKc, static_cast<int>(kPackFloats / ncp) / kKc * kKc);
    for (int kg = 0; kg < g.K; kg += group_k) {
      const int kgn = std::min(group_k, g.K - kg);
      const int slices = (kgn + kKc - 1) / kKc;
      float* Bp = b_scratch.get(static_cast<std::size_t>(kgn) * ncp);
      // Step 1: pack op(B) in (slice, run of kPanelRun panels) pieces.
      const int runs = (n_panels + kPanelRun - 1) / kPanelRun;
      run(static_cast<std::size_t>(slices) * runs, 1, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
          const int s = static_cast<int>(i / runs), r = static_cast<int>(i % runs);
          const int k0 = s * kKc, kc = std::min(kKc, kgn - k0);
          pack_b(Bp + static_cast<std::size_t>(k0) * ncp, g, n0, nc, r * kPanelRun,
                 std::min(n_panels, (r + 1) * kPanelRun), kg + k0, kc);
        }
      });
      // Step 2: each task's rows against the packed block.
      run(ntasks, 1, [&](std::size_t t0, std::size_t t1) {
        thread_local AlignedFloats a_scratch;
        float* Ap = a_scratch.get(static_cast<std::size_t>(task_rows) * kKc);
        for (std::size_t t = t0; t < t1; ++t) {
          const int m_begin = static_cast<int>(t) * task_rows, m_end = std::min(g.M, m_begin + task_rows);
          for (int k0 = 0; k0 < kgn; k0 += kKc) {
            const int kc = std::min(kKc, kgn - k0);
            const bool first = kg + k0 == 0;
            const bool last = kg + k0 + kc == g.K && g.epilogue != GemmEpilogue::none;
            float* sums = n0 == 0 ? g.a_row_sums : nullptr;  // once per row, over every slice
            pack_a(Ap, g, m_begin, m_end, kg + k0, kc, sums);
            // Each B panel (kc x NR, in L1) meets every A panel of the task (streamed from L2).
            const float* Bs = Bp + static_cast<std::size_t>(k0) * ncp;
            Tile tile{nullptr, g.ldc, 0, 0, g.alpha, first ? g.beta : 1.0f, nullptr};
            for (int p = 0; p < n_panels; ++p) {
              const int n = n0 + p * NR;
              tile.n = std::min(NR, g.N - n);
              tile.bias = first && g.bias ? g.bias + n : nullptr;
              const float* Bpan = Bs + static_cast<std::size_t>(p) * kc * NR;
              for (int m = m_begin; m < m_end; m += MR) {
                tile.C = g.C + static_cast<std::size_t>(m) * g.ldc + n;
                tile.m = std::min(MR, m_end - m);
                if (m + MR < m_end)  // the next tile's rows of C, one tile ahead
                  for (int i = 0; i < MR; ++i) {
                    const float* c = tile.C + static_cast<std::size_t>(MR + i) * g.ldc;
                    __builtin_prefetch(c, 1);
                    __builtin_prefetch(c + NR - 1, 1);
                  }
                kern.tile(kc, Ap + static_cast<std::size_t>(m - m_begin) * kc, Bpan, tile);
              }
            }
            if (last) apply_epilogue(g, m_begin, m_end - m_begin, n0, nc);
          }
        }
      });
    }
  }
  static_assert(kNc % 32 == 0, "a packed block must hold whole panels of every kernel");
}

void gemm_ref(const GemmArgs& g) {
  check_args(g);
  for (int i = 0; i < g.M; ++i)
    for (int j = 0; j < g.N; ++j) {
      double s = 0;
      for (int k = 0; k < g.K; ++k) {
        const float a = g.trans_a ? g.A[static_cast<std::size_t>(k) * g.lda + i]
                                  : g.A[static_cast<std::size_t>(i) * g.lda + k];
        const std::size_t at =
            g.trans_b ? static_cast<std::size_t>(j) * g.ldb + k : static_cast<std::size_t>(k) * g.ldb + j;
        const float b = g.B16 != nullptr ? to_float(g.B16[at]) : g.B[at];
        s += double(a) * b;
      }
      float* c = g.C + static_cast<std::size_t>(i) * g.ldc + j;
      const double prev = g.beta != 0.0f ? double(g.beta) * *c : 0.0;
      *c = static_cast<float>(g.alpha * s + prev + (g.bias ? g.bias[j] : 0.0f));
    }
  if (g.a_row_sums)
    for (int i = 0; i < g.M; ++i) {
      double s = 0;
      for (int k = 0; k < g.K; ++k)
        s += g.trans_a ? g.A[static_cast<std::size_t>(k) * g.lda + i]
                       : g.A[static_cast<std::size_t>(i) * g.lda + k];
      g.a_row_sums[i] += static_cast<float>(s);
    }
  // The epilogue with the _ref activations (libm tanh / erf), row by row.
  for (int i = 0; i < g.M && g.epilogue != GemmEpilogue::none; ++i) {
    float* c = g.C + static_cast<std::size_t>(i) * g.ldc;
    const float* in = g.epi_in ? g.epi_in + static_cast<std::size_t>(i) * g.ld_epi_in : nullptr;
    float* out = g.epi_out ? g.epi_out + static_cast<std::size_t>(i) * g.ld_epi_out : nullptr;
    switch (g.epilogue) {
      case GemmEpilogue::none:
        break;
      case GemmEpilogue::gelu_tanh:
        gelu_forward_ref(out, c, g.N);
        break;
      case GemmEpilogue::gelu_exact:
        gelu_exact_forward_ref(out, c, g.N);
        break;
      case GemmEpilogue::gelu_tanh_grad:
        gelu_backward_ref(c, in, c, g.N);
        break;
      case GemmEpilogue::gelu_exact_grad:
        gelu_exact_backward_ref(c, in, c, g.N);
        break;
      case GemmEpilogue::add:
        for (int j = 0; j < g.N; ++j) c[j] += in[j];
        break;
    }
  }
}

}  // namespace tz
