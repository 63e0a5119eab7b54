// Causal self-attention with grouped-query heads on a packed qkv (B, T, (H + 2 KV) D), tiled so that
// nothing of size T x T is ever stored. Query head h reads key/value head h / G, G = H / KV (the group
// size; G = 1 is multi-head attention). For a sequence b and query head h (Q, K, V are T x D slices of
// qkv with row stride (H + 2 KV) D; K, V those of h's key/value head):
//   S = Q K^T / sqrt(D) (row t keeps keys s <= t),  P = softmax_rows(S),  O = P V,
//   lse_t = log sum_{s<=t} exp(S[t,s])  (the row statistic kept for backward: B H T floats)
// backward, with P recomputed as exp(S - lse) and D_t = dO_t . O_t (= sum_s P[t,s] dP[t,s]):
//   dP = dO V^T,  dV = P^T dO,  dS = P * (dP - D) / sqrt(D),  dQ = dS K,  dK = dS^T Q,
// and dK, dV of a key/value head sum these over the G query heads of its group.
//
// How it is tiled (the flash-attention scheme, with blocks sized for a CPU's caches), on gemm's
// micro-kernel and packing (gemm_pack.hpp) rather than on whole gemm calls:
//   - a head's keys and values are packed once (as the B operand of each product that reads them) and
//     every query tile runs against the packed copies; in backward once per key/value head, for the
//     G query heads of its group;
//   - queries in tiles of the whole MR-row panels that fit kQueryTile rows; keys in blocks of
//     kKeyBlock. Causal skipping is per register tile: a (MR queries, NR keys) tile of S after every
//     row's position is not computed, and each panel of rows of P V, dS K runs only as deep as its last
//     row sees (and each panel of keys of P^T dO, dS^T Q starts at its first query), so the work is
//     the causal triangle plus half a register tile along the diagonal;
//   - forward: an online softmax over the key blocks: each row keeps its running maximum m and sum l;
//     a new block's scores S_blk raise m to m', the output row so far and l are rescaled by
//     exp(m - m'), and O += exp(S_blk - m') V_blk; at the end O /= l and lse = m + log l. For T up to
//     kKeyBlock there is one block and no rescaling;
//   - backward: per tile and block, the scores are recomputed (one more product than a materialised
//     backward) and turned into P with the saved lse, then the four products above. dK and dV of a
//     key/value head accumulate in rows of their own over the tiles and the query heads of the group,
//     and are copied into dqkv at the end.
// Working memory per thread: a tile x block of scores and one of dP (2 x 64 x 256 floats), a head's
// packed keys and values (4 T D floats) and its dK, dV (2 T D), so activation memory is linear in T.
// Forward threads over (b, query head); backward over (b, key/value head), each task running the G
// query heads of its group in order, so the dK, dV sums have one writer (no race, no atomics) and
// results do not depend on the thread count. The price of grouping: backward has B KV tasks instead of
// B H, fewer than the threads when B KV is small (B = 1, KV = 1 runs on one thread). The row passes
// (max, exp, softmax gradient, dot) have the vector width of the gemm kernels in use.
// Bytes: qkv read once forward (K, V when packed); backward reads qkv, O and dO once and writes dqkv.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/gemm_pack.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_* (GCC bug
// 105593); popped at the end, so that other files of a unity build keep the warnings.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tz {
namespace {

using gemm_detail::AlignedFloats;
using gemm_detail::Kernel;
using gemm_detail::pack_a_cols;
using gemm_detail::pack_a_rows;
using gemm_detail::pack_b_cols;
using gemm_detail::pack_b_rows;
using gemm_detail::packed_floats;
using gemm_detail::Tile;

constexpr int kQueryTile = 64;  // most rows of a query tile (whole MR-row panels of it)
constexpr int kKeyBlock = 256;  // keys of one block of the online softmax: a multiple of every NR
static_assert(kKeyBlock % 32 == 0 && kKeyBlock % 16 == 0);

// ---- row passes, AVX2 + FMA and portable ----

TZ_AVX2 float row_max_avx2(const float* a, int n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(a + j));
  float mx = simd::hmax256(vmax);
  for (; j < n; ++j) mx = std::max(mx, a[j]);
  return mx;
}

float row_max_portable(const float* a, int n) {
  float mx = -INFINITY;
  for (int j = 0; j < n; ++j) mx = std::max(mx, a[j]);
  return mx;
}

// a[j] = exp(a[j] - shift) for j < n; returns their sum.
TZ_AVX2 float exp_shift_sum_avx2(float* a, int n, float shift) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = simd::exp256(_mm256_sub_ps(_mm256_loadu_ps(a + j), vs));
    _mm256_storeu_ps(a + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = simd::hsum256(acc);
  for (; j < n; ++j) {
    a[j] = std::exp(a[j] - shift);
    sum += a[j];
  }
  return sum;
}

float exp_shift_sum_portable(float* a, int n, float shift) {
  float sum = 0;
  for (int j = 0; j < n; ++j) {
    a[j] = std::exp(a[j] - shift);
    sum += a[j];
  }
  return sum;
}

// dp[j] = p[j] (dp[j] - d) scale: the softmax backward of one row, given d = sum_j p[j] dp[j].
TZ_AVX2 void softmax_grad_avx2(float* dp, const float* p, int n, float d, float scale) {
  const __m256 vd = _mm256_set1_ps(d), vscale = _mm256_set1_ps(scale);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 diff = _mm256_sub_ps(_mm256_loadu_ps(dp + j), vd);
    _mm256_storeu_ps(dp + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + j), diff), vscale));
  }
  for (; j < n; ++j) dp[j] = p[j] * (dp[j] - d) * scale;
}

void softmax_grad_portable(float* dp, const float* p, int n, float d, float scale) {
  for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - d) * scale;
}

TZ_AVX2 float dot_avx2(const float* a, const float* b, int n) {
  __m256 acc = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
  float s = simd::hsum256(acc);
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

float dot_portable(const float* a, const float* b, int n) {
  float s = 0;
  for (int j = 0; j < n; ++j) s += a[j] * b[j];
  return s;
}

// The same passes on 16 floats at a time (AVX-512F), the tail under a mask.
TZ_AVX512F __mmask16 tail_mask(int n) {  // lanes j < n, n in [0, 16]
  return static_cast<__mmask16>((1u << n) - 1);
}

TZ_AVX512F float row_max_avx512(const float* a, int n) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 16 <= n; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(a + j));
  if (j < n) vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(vmax, tail_mask(n - j), a + j));
  return _mm512_reduce_max_ps(vmax);
}

TZ_AVX512F float exp_shift_sum_avx512(float* a, int n, float shift) {
  const __m512 vs = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 e = simd::exp512(_mm512_sub_ps(_mm512_loadu_ps(a + j), vs));
    _mm512_storeu_ps(a + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (j < n) {
    const __mmask16 k = tail_mask(n - j);
    const __m512 e = simd::exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, a + j), vs));
    _mm512_mask_storeu_ps(a + j, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

TZ_AVX512F void softmax_grad_avx512(float* dp, const float* p, int n, float d, float scale) {
  const __m512 vd = _mm512_set1_ps(d), vscale = _mm512_set1_ps(scale);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = tail_mask(std::min(16, n - j));
    const __m512 diff = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + j), vd);
    _mm512_mask_storeu_ps(dp + j, k,
                          _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, p + j), diff), vscale));
  }
}

TZ_AVX512F float dot_avx512(const float* a, const float* b, int n) {
  __m512 acc = _mm512_setzero_ps();
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = tail_mask(std::min(16, n - j));
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + j), _mm512_maskz_loadu_ps(k, b + j), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

struct RowOps {
  float (*max)(const float*, int);
  float (*exp_shift_sum)(float*, int, float);
  void (*softmax_grad)(float*, const float*, int, float, float);
  float (*dot)(const float*, const float*, int);
};

// The row passes of the vector width of the gemm kernels in use (set_gemm_isa chooses both, so a test
// forcing an instruction set runs every pass of that set).
RowOps row_ops() {
  switch (active_gemm_isa()) {
    case GemmIsa::avx512:
      return {row_max_avx512, exp_shift_sum_avx512, softmax_grad_avx512, dot_avx512};
    case GemmIsa::avx2:
      return {row_max_avx2, exp_shift_sum_avx2, softmax_grad_avx2, dot_avx2};
    case GemmIsa::portable:
      break;
  }
  return {row_max_portable, exp_shift_sum_portable, softmax_grad_portable, dot_portable};
}

// One head's operands: rows of q, k, v (and their gradients) with their strides.
struct HeadRows {
  const float* q;
  int ldq;
  const float* k;
  const float* v;
  int ldkv;
};

// The keys row i of a tile may see: [0, first + i] (a prefix of the sequence).
int visible_in_block(int first, int i, int s0, int n) {
  return std::clamp(first + i + 1 - s0, 0, n);
}

// The micro-kernel and its panel sizes; the query tile is the whole panels of A that fit kQueryTile rows.
struct Micro {
  Kernel k;
  int tile_rows;
  explicit Micro(Kernel kern) : k(kern), tile_rows(std::max(kern.mr, kQueryTile / kern.mr * kern.mr)) {}
  int mr() const { return k.mr; }
  int nr() const { return k.nr; }
};

// Per-thread working memory of the tiled kernels, kept across calls (AlignedFloats: the B panels are
// read with aligned loads).
struct TileScratch {
  AlignedFloats kt, vt, kr, vr;  // a key/value head packed: K^T and V^T (B of S and dP), K and V (B of dQ, O)
  AlignedFloats qa, oa, qb, ob;  // a query tile packed: Q and dO as A (S, dP), as B (dK, dV)
  AlignedFloats pa;              // one A panel of P, dS or their transposes
  AlignedFloats dkv;             // dk and dv of a key/value head, T x D each
  std::vector<float> s, dp, row_a, row_b, d;
  // One A panel as deep as a key block or a query tile (the depths of the products after the scores).
  float* a_panel(const Micro& u) {
    return pa.get(packed_floats(u.mr(), u.mr(), std::max(kKeyBlock, u.tile_rows)));
  }
  void reserve(int T, int tile_rows) {
    const std::size_t block = static_cast<std::size_t>(tile_rows) * kKeyBlock;
    if (s.size() < block) s.resize(block), dp.resize(block);
    if (row_a.size() < static_cast<std::size_t>(tile_rows)) row_a.resize(tile_rows), row_b.resize(tile_rows);
    if (d.size() < static_cast<std::size_t>(T)) d.resize(T);
  }
};

TileScratch& tile_scratch(int T, int tile_rows) {
  thread_local TileScratch scratch;
  scratch.reserve(T, tile_rows);
  return scratch;
}

// K^T (or V^T) of `keys` key rows as B panels of NR keys, depth D: the B operand of S = Q K^T.
float* pack_keys_as_columns(AlignedFloats& buf, const float* k, int ld, int keys, int D, const Micro& u) {
  float* p = buf.get(packed_floats(keys, u.nr(), D));
  pack_b_cols(p, k, ld, D, keys, u.nr());
  return p;
}

// K (or V) of `keys` key rows as B panels of NR of its D columns, depth keys: the B operand of O = P V.
float* pack_keys_as_rows(AlignedFloats& buf, const float* k, int ld, int keys, int D, const Micro& u) {
  float* p = buf.get(packed_floats(D, u.nr(), keys));
  pack_b_rows(p, k, ld, keys, D, u.nr());
  return p;
}

// c (m x n block of keys from s0, row stride kKeyBlock) = alpha a b^T for the query tile whose rows are
// positions first .. first + m - 1: a packed as A (depth D), b^T as B panels of keys (pack_keys_as_columns).
// Tiles of keys after every row's position are skipped (left as they were).
void tile_scores(float* c, const float* a_packed, const float* b_packed, int m, int first, int s0, int n,
                 int D, float alpha, const Micro& u) {
  const int MR = u.mr(), NR = u.nr();
  for (int r0 = 0; r0 < m; r0 += MR) {
    const int rows = std::min(MR, m - r0), last = first + r0 + rows - 1;
    const float* a = a_packed + static_cast<std::size_t>(r0) * D;
    for (int c0 = s0; c0 < s0 + n && c0 <= last; c0 += NR) {
      const Tile t{c + static_cast<std::size_t>(r0) * kKeyBlock + (c0 - s0),
                   kKeyBlock,
                   rows,
                   std::min(NR, s0 + n - c0),
                   alpha,
                   0.0f,
                   nullptr};
      u.k.tile(D, a, b_packed + static_cast<std::size_t>(c0 / NR) * D * NR, t);
    }
  }
}

// out (m x D, row stride ldo) = beta out + p v, p the m x n block of rows of the query tile (row stride
// kKeyBlock, zero past each row's keys), v_rows the value (or key) rows packed by pack_keys_as_rows with
// depth `keys`, from key s0. Each panel of rows runs only as deep as its last row sees.
void tile_times_rows(float* out, int ldo, float beta, const float* p, int m, int first, int s0, int n,
                     const float* v_rows, int keys, int D, float* pa, const Micro& u) {
  const int MR = u.mr(), NR = u.nr();
  for (int r0 = 0; r0 < m; r0 += MR) {
    const int rows = std::min(MR, m - r0), depth = std::clamp(first + r0 + rows - s0, 0, n);
    if (depth == 0) continue;  // rows before this block: nothing to add (beta is 1 past the first block)
    pack_a_rows(pa, p + static_cast<std::size_t>(r0) * kKeyBlock, kKeyBlock, rows, depth, MR);
    for (int j0 = 0; j0 < D; j0 += NR) {
      const Tile t{out + static_cast<std::size_t>(r0) * ldo + j0,
                   ldo,
                   rows,
                   std::min(NR, D - j0),
                   1.0f,
                   beta,
                   nullptr};
      u.k.tile(depth, pa, v_rows + (static_cast<std::size_t>(j0) * keys + static_cast<std::size_t>(s0) * NR),
               t);
    }
  }
}

// acc (n key rows from s0, row stride ld) += x^T y: x the m x n block of the query tile (P or dS, row
// stride kKeyBlock), y the tile's m rows packed as B (panels of NR of D, depth m). Key panel c meets only
// the rows at or after it.
void keys_accumulate(float* acc, int ld, const float* x, const float* y_packed, int m, int first, int s0,
                     int n, int D, float* pa, const Micro& u) {
  const int MR = u.mr(), NR = u.nr();
  for (int c0 = 0; c0 < n; c0 += MR) {
    const int cols = std::min(MR, n - c0), from = std::clamp(s0 + c0 - first, 0, m);
    if (from == m) break;  // keys after every row
    const int depth = m - from;
    pack_a_cols(pa, x + static_cast<std::size_t>(from) * kKeyBlock + c0, kKeyBlock, cols, depth, MR);
    for (int j0 = 0; j0 < D; j0 += NR) {
      const Tile t{acc + static_cast<std::size_t>(s0 + c0) * ld + j0,
                   ld,
                   cols,
                   std::min(NR, D - j0),
                   1.0f,
                   1.0f,
                   nullptr};
      u.k.tile(depth, pa, y_packed + (static_cast<std::size_t>(j0) * m + static_cast<std::size_t>(from) * NR),
               t);
    }
  }
}

// Forward for `rows` query rows whose positions are first .. first + rows - 1, against keys 0 ..
// first + rows - 1: o (rows x hs, stride ldo) and lse (rows) written.
void attend_rows(const HeadRows& h, int rows, int first, int hs, float scale, float* o, int ldo, float* lse,
                 const RowOps& ops, const Micro& u) {
  const int keys = first + rows;
  TileScratch& w = tile_scratch(0, u.tile_rows);  // no per-row D_t in forward
  const float* kt = pack_keys_as_columns(w.kt, h.k, h.ldkv, keys, hs, u);
  const float* vr = pack_keys_as_rows(w.vr, h.v, h.ldkv, keys, hs, u);
  float* pa = w.a_panel(u);
  float *s = w.s.data(), *mx = w.row_a.data(), *l = w.row_b.data();
  for (int r0 = 0; r0 < rows; r0 += u.tile_rows) {
    const int m = std::min(u.tile_rows, rows - r0), tf = first + r0, tile_keys = tf + m;
    float* qa = w.qa.get(packed_floats(m, u.mr(), hs));
    pack_a_rows(qa, h.q + static_cast<std::size_t>(r0) * h.ldq, h.ldq, m, hs, u.mr());
    float* ot = o + static_cast<std::size_t>(r0) * ldo;
    for (int s0 = 0; s0 < tile_keys; s0 += kKeyBlock) {
      const int n = std::min(kKeyBlock, tile_keys - s0);
      const bool first_block = s0 == 0;
      tile_scores(s, qa, kt, m, tf, s0, n, hs, scale, u);
      for (int i = 0; i < m; ++i) {
        float* row = s + static_cast<std::size_t>(i) * kKeyBlock;
        const int vis = visible_in_block(tf, i, s0, n);
        if (vis == 0) {  // a row before this block's first key
          std::fill(row, row + n, 0.0f);
          continue;
        }
        const float block_max = ops.max(row, vis);
        const float m_new = first_block ? block_max : std::max(mx[i], block_max);
        const float sum = ops.exp_shift_sum(row, vis, m_new);
        std::fill(row + vis, row + n, 0.0f);
        if (first_block) {
          l[i] = sum;
        } else {
          const float alpha = std::exp(mx[i] - m_new);
          l[i] = l[i] * alpha + sum;
          float* orow = ot + static_cast<std::size_t>(i) * ldo;
          for (int j = 0; j < hs; ++j) orow[j] *= alpha;
        }
        mx[i] = m_new;
      }
      tile_times_rows(ot, ldo, first_block ? 0.0f : 1.0f, s, m, tf, s0, n, vr, keys, hs, pa, u);
    }
    for (int i = 0; i < m; ++i) {
      const float inv = 1.0f / l[i];
      float* orow = ot + static_cast<std::size_t>(i) * ldo;
      for (int j = 0; j < hs; ++j) orow[j] *= inv;
      lse[r0 + i] = mx[i] + std::log(l[i]);
    }
  }
}

// The layout of a grouped-query qkv row: [q (H D) | k (KV D) | v (KV D)].
struct QkvLayout {
  int H, KV, D;
  int group() const { return H / KV; }
  int row() const { return (H + 2 * KV) * D; }  // qkv's row stride
  int out_row() const { return H * D; }         // out's and dout's row stride
  int k_col(int kv) const { return H * D + kv * D; }
  int v_col(int kv) const { return (H + KV) * D + kv * D; }
};

void head_forward(float* out, float* lse, const float* qkv, int b, int h, int T, const QkvLayout& L,
                  const RowOps& ops, const Micro& u) {
  const int hs = L.D, ld = L.row(), C = L.out_row(), kv = h / L.group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* seq = qkv + static_cast<std::size_t>(b) * T * ld;
  const HeadRows rows{seq + h * hs, ld, seq + L.k_col(kv), seq + L.v_col(kv), ld};
  attend_rows(rows, T, 0, hs, scale, out + static_cast<std::size_t>(b) * T * C + h * hs, C,
              lse + (static_cast<std::size_t>(b) * L.H + h) * T, ops, u);
}

// The backward of key/value head kv of sequence b: its dk, dv cleared, its keys and values packed once,
// then the query heads of its group in order, each writing its dq and adding P^T dO and dS^T Q to dv, dk.
void group_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                    int b, int kv, int T, const QkvLayout& L, const RowOps& ops, const Micro& u) {
  const int hs = L.D, ld = L.row(), C = L.out_row();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t base = static_cast<std::size_t>(b) * T * ld;
  const float *k = qkv + base + L.k_col(kv), *v = qkv + base + L.v_col(kv);
  TileScratch& w = tile_scratch(T, u.tile_rows);
  // dk and dv accumulate in rows of their own (hs floats apart, not a whole qkv row): the products
  // add to them once per query tile, and rows a qkv row apart would share a few L1 sets.
  const std::size_t acc = static_cast<std::size_t>(T) * hs;
  float* dk = w.dkv.get(2 * acc);
  float* dv = dk + acc;
  std::memset(dk, 0, sizeof(float) * 2 * acc);
  const float* kt = pack_keys_as_columns(w.kt, k, ld, T, hs, u);
  const float* vt = pack_keys_as_columns(w.vt, v, ld, T, hs, u);
  const float* kr = pack_keys_as_rows(w.kr, k, ld, T, hs, u);
  float* pa = w.a_panel(u);
  float *p = w.s.data(), *dp = w.dp.data(), *d = w.d.data();
  const int G = L.group();
  for (int h = kv * G; h < (kv + 1) * G; ++h) {
    const float* q = qkv + base + h * hs;
    float* dq = dqkv + base + h * hs;
    const std::size_t obase = static_cast<std::size_t>(b) * T * C + h * hs;
    const float *dO = dout + obase, *o = out + obase;
    const float* row_lse = lse + (static_cast<std::size_t>(b) * L.H + h) * T;
    for (int t = 0; t < T; ++t) {  // D_t = dO_t . O_t
      const std::size_t r = static_cast<std::size_t>(t) * C;
      d[t] = ops.dot(dO + r, o + r, hs);
    }
    for (int t0 = 0; t0 < T; t0 += u.tile_rows) {
      const int m = std::min(u.tile_rows, T - t0), t1 = t0 + m;
      const float* qt = q + static_cast<std::size_t>(t0) * ld;
      const float* dOt = dO + static_cast<std::size_t>(t0) * C;
      float* qa = w.qa.get(packed_floats(m, u.mr(), hs));
      float* oa = w.oa.get(packed_floats(m, u.mr(), hs));
      float* qb = w.qb.get(packed_floats(hs, u.nr(), m));
      float* ob = w.ob.get(packed_floats(hs, u.nr(), m));
      pack_a_rows(qa, qt, ld, m, hs, u.mr());
      pack_a_rows(oa, dOt, C, m, hs, u.mr());
      pack_b_rows(qb, qt, ld, m, hs, u.nr());
      pack_b_rows(ob, dOt, C, m, hs, u.nr());
      for (int s0 = 0; s0 < t1; s0 += kKeyBlock) {
        const int n = std::min(kKeyBlock, t1 - s0);
        tile_scores(p, qa, kt, m, t0, s0, n, hs, scale, u);
        tile_scores(dp, oa, vt, m, t0, s0, n, hs, 1.0f, u);
        for (int i = 0; i < m; ++i) {
          float* prow = p + static_cast<std::size_t>(i) * kKeyBlock;
          float* dprow = dp + static_cast<std::size_t>(i) * kKeyBlock;
          const int vis = visible_in_block(t0, i, s0, n);
          ops.exp_shift_sum(prow, vis, row_lse[t0 + i]);
          ops.softmax_grad(dprow, prow, vis, d[t0 + i], scale);
          std::fill(prow + vis, prow + n, 0.0f);
          std::fill(dprow + vis, dprow + n, 0.0f);
        }
        keys_accumulate(dv, hs, p, ob, m, t0, s0, n, hs, pa, u);
        tile_times_rows(dq + static_cast<std::size_t>(t0) * ld, ld, s0 == 0 ? 0.0f : 1.0f, dp, m, t0, s0, n,
                        kr, T, hs, pa, u);
        keys_accumulate(dk, hs, dp, qb, m, t0, s0, n, hs, pa, u);
      }
    }
  }
  float *dk_out = dqkv + base + L.k_col(kv), *dv_out = dqkv + base + L.v_col(kv);
  for (int t = 0; t < T; ++t) {
    std::memcpy(dk_out + static_cast<std::size_t>(t) * ld, dk + static_cast<std::size_t>(t) * hs,
                sizeof(float) * hs);
    std::memcpy(dv_out + static_cast<std::size_t>(t) * ld, dv + static_cast<std::size_t>(t) * hs,
                sizeof(float) * hs);
  }
}

QkvLayout qkv_layout(const char* what, int H, int KV, int D) {
  check_attention_heads(what, H, KV, D);
  return {H, KV, D};
}

// ---- the materialised reference ----

void softmax_row_ref(float* a, int n) {
  float mx = a[0];
  for (int j = 1; j < n; ++j) mx = std::max(mx, a[j]);
  float sum = 0;
  for (int j = 0; j < n; ++j) {
    a[j] = std::exp(a[j] - mx);
    sum += a[j];
  }
  for (int j = 0; j < n; ++j) a[j] *= 1.0f / sum;
}

void softmax_backward_row_ref(float* dp, const float* p, int n, float scale) {
  float s = 0;
  for (int j = 0; j < n; ++j) s += p[j] * dp[j];
  for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - s) * scale;
}

}  // namespace

void check_attention_heads(const char* what, int H, int KV, int D) {
  if (H < 1 || KV < 1 || D < 1 || H % KV != 0)
    throw InputError(
        fmt::format("{}: {} query heads, {} key/value heads of size {}: the key/value heads must "
                    "divide the query heads (and all be positive)",
                    what, H, KV, D));
}

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int H, int KV, int D) {
  const QkvLayout L = qkv_layout("attention_forward", H, KV, D);
  const RowOps ops = row_ops();
  const Micro u(gemm_detail::active_kernel());
  parallel_for(static_cast<std::size_t>(B) * H, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p)
      head_forward(out, lse, qkv, static_cast<int>(p / H), static_cast<int>(p % H), T, L, ops, u);
  });
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                        int B, int T, int H, int KV, int D) {
  const QkvLayout L = qkv_layout("attention_backward", H, KV, D);
  const RowOps ops = row_ops();
  const Micro u(gemm_detail::active_kernel());
  parallel_for(static_cast<std::size_t>(B) * KV, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p)
      group_backward(dqkv, dout, qkv, out, lse, static_cast<int>(p / KV), static_cast<int>(p % KV), T, L, ops,
                     u);
  });
}

void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache, int pos, int H,
                      int KV, int D) {
  const QkvLayout L = qkv_layout("attention_decode", H, KV, D);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const RowOps ops = row_ops();
  const Micro u(gemm_detail::active_kernel());
  for (int h = 0; h < H; ++h) {
    const int kv = h / L.group();
    const HeadRows rows{q + h * D, H * D, k_cache + kv * D, v_cache + kv * D, KV * D};
    float lse = 0;
    attend_rows(rows, 1, pos, D, scale, out + h * D, H * D, &lse, ops, u);
  }
}

void attention_forward_ref(float* out, float* att, const float* qkv, int B, int T, int H, int KV, int D) {
  const QkvLayout L = qkv_layout("attention_forward_ref", H, KV, D);
  const std::size_t ld = L.row(), C = L.out_row();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int kv = h / L.group();
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (static_cast<std::size_t>(b) * T + t) * ld + h * D;
        float* a = att + ((static_cast<std::size_t>(b) * H + h) * T + t) * T;
        for (int s = 0; s <= t; ++s) {
          const float* k = qkv + (static_cast<std::size_t>(b) * T + s) * ld + L.k_col(kv);
          float dot = 0;
          for (int i = 0; i < D; ++i) dot += q[i] * k[i];
          a[s] = dot * scale;
        }
        softmax_row_ref(a, t + 1);
        for (int s = t + 1; s < T; ++s) a[s] = 0;
        float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * D;
        for (int i = 0; i < D; ++i) o[i] = 0;
        for (int s = 0; s <= t; ++s) {
          const float* v = qkv + (static_cast<std::size_t>(b) * T + s) * ld + L.v_col(kv);
          for (int i = 0; i < D; ++i) o[i] += a[s] * v[i];
        }
      }
    }
}

void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                            int H, int KV, int D) {
  const QkvLayout L = qkv_layout("attention_backward_ref", H, KV, D);
  const std::size_t ld = L.row(), C = L.out_row();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::fill(dqkv, dqkv + static_cast<std::size_t>(B) * T * ld, 0.0f);
  std::vector<float> dp(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const std::size_t kcol = L.k_col(h / L.group()), vcol = L.v_col(h / L.group());
      for (int t = 0; t < T; ++t) {
        const std::size_t row = (static_cast<std::size_t>(b) * T + t) * ld + h * D;
        const float* a = att + ((static_cast<std::size_t>(b) * H + h) * T + t) * T;
        const float* dO = dout + (static_cast<std::size_t>(b) * T + t) * C + h * D;
        for (int s = 0; s <= t; ++s) {
          const std::size_t srow = (static_cast<std::size_t>(b) * T + s) * ld;
          float d = 0;
          for (int i = 0; i < D; ++i) {
            d += dO[i] * qkv[srow + vcol + i];
            dqkv[srow + vcol + i] += a[s] * dO[i];
          }
          dp[s] = d;
        }
        softmax_backward_row_ref(dp.data(), a, t + 1, scale);
        for (int s = 0; s <= t; ++s) {
          const std::size_t srow = (static_cast<std::size_t>(b) * T + s) * ld;
          for (int i = 0; i < D; ++i) {
            dqkv[row + i] += dp[s] * qkv[srow + kcol + i];
            dqkv[srow + kcol + i] += dp[s] * qkv[row + i];
          }
        }
      }
    }
}

}  // namespace tz

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
