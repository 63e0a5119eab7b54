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
// How it is tiled (the flash-attention scheme, with blocks sized for a CPU's caches):
//   - queries in tiles of kQueryTile rows; keys in blocks of kKeyBlock columns; a tile of rows
//     [t0, t1) meets only the key blocks that start before t1 (causal blocks above the diagonal are
//     skipped), and only the diagonal block is masked;
//   - forward: an online softmax over the key blocks: each row keeps its running maximum m and sum l;
//     a new block's scores S_blk raise m to m', the output row so far and l are rescaled by
//     exp(m - m'), and O += exp(S_blk - m') V_blk; at the end O /= l and lse = m + log l. For T up to
//     kKeyBlock there is one block and no rescaling;
//   - backward: per tile and block, the scores are recomputed (one more product than a materialised
//     backward) and turned into P with the saved lse, then the four products above. dK and dV of a
//     block accumulate over the tiles below it and over the query heads of the group.
// Working memory is a tile x block of scores and one of dP per thread (2 x 64 x 256 floats), so
// activation memory is linear in T. Forward threads over (b, query head); backward over (b, key/value
// head), each task running the G query heads of its group in order, so the dK, dV sums have one writer
// (no race, no atomics) and results do not depend on the thread count (products through the gemm with
// serial set). The price of grouping: backward has B KV tasks instead of B H, fewer than the threads
// when B KV is small (B = 1, KV = 1 runs on one thread).
// Bytes: qkv read once forward; backward reads qkv, O and dO once per key block and writes dqkv.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

constexpr int kQueryTile = 64;
constexpr int kKeyBlock = 256;  // a multiple of kQueryTile: every row of a tile meets every block it reaches
static_assert(kKeyBlock % kQueryTile == 0);

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

struct RowOps {
  float (*max)(const float*, int);
  float (*exp_shift_sum)(float*, int, float);
  void (*softmax_grad)(float*, const float*, int, float, float);
  float (*dot)(const float*, const float*, int);
};

RowOps row_ops() {
  if (simd::have_avx2_fma()) return {row_max_avx2, exp_shift_sum_avx2, softmax_grad_avx2, dot_avx2};
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

// s (m x n, row stride kKeyBlock) = scale q k^T for m query rows against n key rows: the scores of one
// tile and block, computed by forward and recomputed by backward.
void query_key_scores(float* s, const float* q, int ldq, const float* k, int ldk, int m, int n, int hs,
                      float scale) {
  gemm({.trans_b = true,
        .M = m,
        .N = n,
        .K = hs,
        .alpha = scale,
        .A = q,
        .lda = ldq,
        .B = k,
        .ldb = ldk,
        .C = s,
        .ldc = kKeyBlock,
        .serial = true});
}

// Forward for m query rows whose positions are first .. first+m-1, against keys 0 .. first+m-1:
// o (m x hs, stride ldo) and lse (m) written. s: m x kKeyBlock scratch; mx, l: m floats each.
void attend_rows(const HeadRows& h, int m, int first, int hs, float scale, float* o, int ldo, float* lse,
                 float* s, float* mx, float* l, const RowOps& ops) {
  const int keys = first + m;
  for (int s0 = 0; s0 < keys; s0 += kKeyBlock) {
    const int n = std::min(kKeyBlock, keys - s0);
    const bool first_block = s0 == 0;
    query_key_scores(s, h.q, h.ldq, h.k + static_cast<std::size_t>(s0) * h.ldkv, h.ldkv, m, n, hs, scale);
    for (int i = 0; i < m; ++i) {
      float* row = s + static_cast<std::size_t>(i) * kKeyBlock;
      const int vis = visible_in_block(first, i, s0, n);
      if (vis == 0) {  // a row before this block's first key (not reached with aligned tiles)
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
        float* orow = o + static_cast<std::size_t>(i) * ldo;
        for (int j = 0; j < hs; ++j) orow[j] *= alpha;
      }
      mx[i] = m_new;
    }
    gemm({.M = m,
          .N = hs,
          .K = n,
          .A = s,
          .lda = kKeyBlock,
          .B = h.v + static_cast<std::size_t>(s0) * h.ldkv,
          .ldb = h.ldkv,
          .beta = first_block ? 0.0f : 1.0f,
          .C = o,
          .ldc = ldo,
          .serial = true});
  }
  for (int i = 0; i < m; ++i) {
    const float inv = 1.0f / l[i];
    float* orow = o + static_cast<std::size_t>(i) * ldo;
    for (int j = 0; j < hs; ++j) orow[j] *= inv;
    lse[i] = mx[i] + std::log(l[i]);
  }
}

// Per-thread working memory of the tiled kernels, kept across calls.
struct TileScratch {
  std::vector<float> s, dp, row_a, row_b;
  void reserve(int T) {
    s.resize(static_cast<std::size_t>(kQueryTile) * kKeyBlock);
    dp.resize(static_cast<std::size_t>(kQueryTile) * kKeyBlock);
    row_a.resize(std::max(kQueryTile, T));
    row_b.resize(kQueryTile);
  }
};

TileScratch& tile_scratch(int T) {
  thread_local TileScratch scratch;
  scratch.reserve(T);
  return scratch;
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
                  const RowOps& ops) {
  const int hs = L.D, ld = L.row(), C = L.out_row(), kv = h / L.group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* seq = qkv + static_cast<std::size_t>(b) * T * ld;
  const float *q = seq + h * hs, *k = seq + L.k_col(kv), *v = seq + L.v_col(kv);
  float* o = out + static_cast<std::size_t>(b) * T * C + h * hs;
  float* row_lse = lse + (static_cast<std::size_t>(b) * L.H + h) * T;
  TileScratch& w = tile_scratch(T);
  for (int t0 = 0; t0 < T; t0 += kQueryTile) {
    const int m = std::min(kQueryTile, T - t0);
    const HeadRows rows{q + static_cast<std::size_t>(t0) * ld, ld, k, v, ld};
    attend_rows(rows, m, t0, hs, scale, o + static_cast<std::size_t>(t0) * C, C, row_lse + t0, w.s.data(),
                w.row_a.data(), w.row_b.data(), ops);
  }
}

// Query head h's share of backward: its dq written, its P^T dO and dS^T Q added to dk, dv (h's
// key/value head, cleared by the caller).
void head_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                   int b, int h, int T, const QkvLayout& L, const RowOps& ops) {
  const int hs = L.D, ld = L.row(), C = L.out_row(), kv = h / L.group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t base = static_cast<std::size_t>(b) * T * ld;
  const float *q = qkv + base + h * hs, *k = qkv + base + L.k_col(kv), *v = qkv + base + L.v_col(kv);
  float *dq = dqkv + base + h * hs, *dk = dqkv + base + L.k_col(kv), *dv = dqkv + base + L.v_col(kv);
  const std::size_t obase = static_cast<std::size_t>(b) * T * C + h * hs;
  const float* dO = dout + obase;
  const float* o = out + obase;
  const float* row_lse = lse + (static_cast<std::size_t>(b) * L.H + h) * T;
  TileScratch& w = tile_scratch(T);
  float* d = w.row_a.data();  // D_t = dO_t . O_t for every t
  for (int t = 0; t < T; ++t) {
    const std::size_t r = static_cast<std::size_t>(t) * C;
    d[t] = ops.dot(dO + r, o + r, hs);
  }
  float *p = w.s.data(), *dp = w.dp.data();
  for (int t0 = 0; t0 < T; t0 += kQueryTile) {
    const int m = std::min(kQueryTile, T - t0), t1 = t0 + m;
    const float* qt = q + static_cast<std::size_t>(t0) * ld;
    const float* dOt = dO + static_cast<std::size_t>(t0) * C;
    for (int s0 = 0; s0 < t1; s0 += kKeyBlock) {
      const int n = std::min(kKeyBlock, t1 - s0);
      const float* kb = k + static_cast<std::size_t>(s0) * ld;
      const float* vb = v + static_cast<std::size_t>(s0) * ld;
      query_key_scores(p, qt, ld, kb, ld, m, n, hs, scale);
      gemm({.trans_b = true,
            .M = m,
            .N = n,
            .K = hs,
            .A = dOt,
            .lda = C,
            .B = vb,
            .ldb = ld,
            .C = dp,
            .ldc = kKeyBlock,
            .serial = true});
      for (int i = 0; i < m; ++i) {
        float* prow = p + static_cast<std::size_t>(i) * kKeyBlock;
        float* dprow = dp + static_cast<std::size_t>(i) * kKeyBlock;
        const int vis = visible_in_block(t0, i, s0, n);
        ops.exp_shift_sum(prow, vis, row_lse[t0 + i]);
        ops.softmax_grad(dprow, prow, vis, d[t0 + i], scale);
        std::fill(prow + vis, prow + n, 0.0f);
        std::fill(dprow + vis, dprow + n, 0.0f);
      }
      gemm({.trans_a = true,
            .M = n,
            .N = hs,
            .K = m,
            .A = p,
            .lda = kKeyBlock,
            .B = dOt,
            .ldb = C,
            .beta = 1.0f,
            .C = dv + static_cast<std::size_t>(s0) * ld,
            .ldc = ld,
            .serial = true});
      gemm({.M = m,
            .N = hs,
            .K = n,
            .A = dp,
            .lda = kKeyBlock,
            .B = kb,
            .ldb = ld,
            .beta = s0 == 0 ? 0.0f : 1.0f,
            .C = dq + static_cast<std::size_t>(t0) * ld,
            .ldc = ld,
            .serial = true});
      gemm({.trans_a = true,
            .M = n,
            .N = hs,
            .K = m,
            .A = dp,
            .lda = kKeyBlock,
            .B = qt,
            .ldb = ld,
            .beta = 1.0f,
            .C = dk + static_cast<std::size_t>(s0) * ld,
            .ldc = ld,
            .serial = true});
    }
  }
}

// The backward of key/value head kv of sequence b: its dk, dv cleared, then the query heads of its
// group in order.
void group_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                    int b, int kv, int T, const QkvLayout& L, const RowOps& ops) {
  const int ld = L.row();
  float* dk = dqkv + static_cast<std::size_t>(b) * T * ld + L.k_col(kv);
  float* dv = dqkv + static_cast<std::size_t>(b) * T * ld + L.v_col(kv);
  for (int t = 0; t < T; ++t) {
    std::memset(dk + static_cast<std::size_t>(t) * ld, 0, sizeof(float) * L.D);
    std::memset(dv + static_cast<std::size_t>(t) * ld, 0, sizeof(float) * L.D);
  }
  const int G = L.group();
  for (int h = kv * G; h < (kv + 1) * G; ++h) head_backward(dqkv, dout, qkv, out, lse, b, h, T, L, ops);
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
  parallel_for(static_cast<std::size_t>(B) * H, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p)
      head_forward(out, lse, qkv, static_cast<int>(p / H), static_cast<int>(p % H), T, L, ops);
  });
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                        int B, int T, int H, int KV, int D) {
  const QkvLayout L = qkv_layout("attention_backward", H, KV, D);
  const RowOps ops = row_ops();
  parallel_for(static_cast<std::size_t>(B) * KV, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p)
      group_backward(dqkv, dout, qkv, out, lse, static_cast<int>(p / KV), static_cast<int>(p % KV), T, L,
                     ops);
  });
}

void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache, int pos, int H,
                      int KV, int D) {
  const QkvLayout L = qkv_layout("attention_decode", H, KV, D);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const RowOps ops = row_ops();
  TileScratch& w = tile_scratch(1);
  for (int h = 0; h < H; ++h) {
    const int kv = h / L.group();
    const HeadRows rows{q + h * D, H * D, k_cache + kv * D, v_cache + kv * D, KV * D};
    float lse = 0;
    attend_rows(rows, 1, pos, D, scale, out + h * D, H * D, &lse, w.s.data(), w.row_a.data(), w.row_b.data(),
                ops);
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
