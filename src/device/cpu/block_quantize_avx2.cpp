// AVX2 path of the block quantizer, for x86-64 CPUs without AVX-512 (compiled with per-function
// target attributes, so the library still runs on CPUs without AVX2; block_quantize_dispatch.cpp
// picks it only where the CPU has it). 8 lanes of fp32 per vector, 32 elements (one code group) per
// step; block sizes are multiples of 32, so only the last, partial block of a tensor has a tail, and
// that tail goes through a small zero-filled staging buffer (zero lanes give the zero padding codes).
// Same results as the reference, bit for bit, by the same fp32 operations:
//   - block maximum: unsigned max of the bit patterns of |x| (also flags NaN/inf, >= 0x7f800000);
//     bf16 input is compared as 16-bit patterns, 16 lanes per vector;
//   - codes: the fp32 product x * (1/scale), converted in the default rounding mode (round half to
//     even, as nearbyint in the reference), packed with saturation to int8 and clamped to
//     [-qmax, qmax]; INT4 packs pairs of those into nibbles, even element low;
//   - values: code * scale as a rounded fp32 product; to bf16 by integer round-to-nearest-even on
//     the bit patterns (u + 0x7fff + lsb) >> 16: the blocks handled here have scale 0 or normal, so
//     every value is finite and no NaN needs quieting;
//   - dequantize_add: acc + value, a rounded fp32 sum of the rounded product.
// No fused multiply-add anywhere (fp-contract=off, and no FMA intrinsics): the format rounds each
// product before it is added, so this path needs AVX2 only, though the CPUs it serves have FMA.
// Blocks with a NaN/inf or a subnormal scale are handed to the scalar code (block_kernels.hpp).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "device/cpu/block_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <algorithm>

#include "device/cpu/block_quantize.hpp"

#define TZ_QUANT_AVX2 __attribute__((target("avx2")))

namespace tz {
namespace {

using namespace quant_detail;

constexpr std::size_t kGroup = 32;  // elements per step: 32 INT8 code bytes, 16 INT4 code bytes

// Room for one group of elements of the tail of a block, staged so that whole vectors can be read
// and written; the intrinsics' loads and stores may alias any type.
template <typename T>
struct alignas(32) StagedGroup {
  unsigned char bytes[kGroup * sizeof(T)] = {};
  T* data() { return reinterpret_cast<T*>(bytes); }
};

// 8 elements from p as fp32.
TZ_QUANT_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
TZ_QUANT_AVX2 inline __m256 load8(const bf16* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline std::uint32_t abs_bits(const float* p) {
  std::uint32_t u;
  std::memcpy(&u, p, sizeof u);
  return u & 0x7fffffffu;
}
inline std::uint32_t abs_bits(const bf16* p) {
  return static_cast<std::uint32_t>(p->bits & 0x7fffu) << 16;
}

TZ_QUANT_AVX2 inline std::uint32_t hmax_epu32(__m256i m) {
  __m128i v = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  v = _mm_max_epu32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm_max_epu32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(v));
}

// The block maximum is the first pass over the input, so it prefetches this far ahead: the hardware
// prefetcher alone did not keep up with the two passes per block (max, then codes), and measured
// quantize at 64 MiB ran about 1.4x faster with it (docs/quantization.md).
constexpr std::size_t kPrefetchBytes = 4096;

TZ_QUANT_AVX2 inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
}

// The bit patterns of |x| of one vector of elements at p (8 fp32 or 16 bf16).
template <typename T>
TZ_QUANT_AVX2 inline __m256i abs_vector(const T* p, __m256i abs_mask) {
  return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), abs_mask);
}

// Bit pattern of max |x| over x[0, n), as fp32 bits.
TZ_QUANT_AVX2 std::uint32_t block_amax_bits(const float* x, std::size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 128 bytes: two cache lines
    prefetch_ahead(x + i);
    prefetch_ahead(x + i + 16);
    m0 = _mm256_max_epu32(m0, abs_vector(x + i, abs_mask));
    m1 = _mm256_max_epu32(m1, abs_vector(x + i + 8, abs_mask));
    m2 = _mm256_max_epu32(m2, abs_vector(x + i + 16, abs_mask));
    m3 = _mm256_max_epu32(m3, abs_vector(x + i + 24, abs_mask));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_epu32(m0, abs_vector(x + i, abs_mask));
  std::uint32_t m = hmax_epu32(_mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
  for (; i < n; ++i) m = std::max(m, abs_bits(x + i));
  return m;
}

// bf16: the 16-bit patterns of |x| are compared directly (16 lanes), then widened to fp32 bits.
TZ_QUANT_AVX2 std::uint32_t block_amax_bits(const bf16* x, std::size_t n) {
  const __m256i abs_mask = _mm256_set1_epi16(0x7fff);
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 64 bytes: one cache line
    prefetch_ahead(x + i);
    m0 = _mm256_max_epu16(m0, abs_vector(x + i, abs_mask));
    m1 = _mm256_max_epu16(m1, abs_vector(x + i + 16, abs_mask));
  }
  for (; i + 16 <= n; i += 16) m0 = _mm256_max_epu16(m0, abs_vector(x + i, abs_mask));
  const __m256i m = _mm256_max_epu16(m0, m1);
  const __m128i v = _mm_max_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  // max of unsigned words = ~min of their complements, and PHMINPOSUW finds that min.
  const __m128i inverted_min = _mm_minpos_epu16(_mm_xor_si128(v, _mm_set1_epi32(-1)));
  std::uint32_t bits = (~static_cast<std::uint32_t>(_mm_cvtsi128_si32(inverted_min)) & 0xffffu) << 16;
  for (; i < n; ++i) bits = std::max(bits, abs_bits(x + i));
  return bits;
}

// 8 codes as int32 lanes: x * inv in fp32, converted in the default rounding mode (half to even).
TZ_QUANT_AVX2 inline __m256i codes8(__m256 v, __m256 inv) {
  return _mm256_cvtps_epi32(_mm256_mul_ps(v, inv));
}

// 32 int32 codes (a: elements 0-7, b: 8-15, c: 16-23, d: 24-31) as 32 int8 codes in element order,
// clamped to [-qmax, qmax]. The packs saturate to [-128, 127] first, which the clamp then narrows.
TZ_QUANT_AVX2 inline __m256i pack_codes32(__m256i a, __m256i b, __m256i c, __m256i d, __m256i qmax8) {
  // per 128-bit lane: packs_epi32 -> [a0-3 b0-3 | a4-7 b4-7], packs_epi16 -> [a0-3 b0-3 c0-3 d0-3 |
  // a4-7 b4-7 c4-7 d4-7] (one dword each); the permute puts the dwords back in element order.
  const __m256i abcd = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  const __m256i ordered = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  return _mm256_max_epi8(_mm256_min_epi8(ordered, qmax8), _mm256_sub_epi8(_mm256_setzero_si256(), qmax8));
}

// INT4: 32 int8 codes -> 16 bytes, element 2k in the low nibble of byte k and 2k+1 in the high one.
TZ_QUANT_AVX2 inline __m128i pack_nibbles32(__m256i c8) {
  // As 16-bit words w = c[2k] | c[2k+1] << 8: byte k = (w & 0x0f) | ((w >> 4) & 0xf0).
  const __m256i t = _mm256_or_si256(_mm256_and_si256(c8, _mm256_set1_epi16(0x000f)),
                                    _mm256_and_si256(_mm256_srli_epi16(c8, 4), _mm256_set1_epi16(0x00f0)));
  return _mm_packus_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

// The codes of one group of 32 elements at x: 32 bytes (INT8) or 16 (INT4) at out.
template <QuantBits Bits, typename T>
TZ_QUANT_AVX2 inline void encode_group(const T* x, __m256 inv, __m256i qmax8, std::uint8_t* out) {
  const __m256i c = pack_codes32(codes8(load8(x), inv), codes8(load8(x + 8), inv), codes8(load8(x + 16), inv),
                                 codes8(load8(x + 24), inv), qmax8);
  if constexpr (Bits == QuantBits::int8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), c);
  else
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), pack_nibbles32(c));
}

// Codes of one block with a normal scale (codes: quant_code_bytes bytes, all written).
template <QuantBits Bits, typename T>
TZ_QUANT_AVX2 void encode_normal_block(const T* x, std::size_t n, float inv_scale, std::uint8_t* codes,
                                       std::size_t block) {
  const __m256 inv = _mm256_set1_ps(inv_scale);
  const __m256i qmax8 = _mm256_set1_epi8(static_cast<char>(quant_qmax(Bits)));
  constexpr std::size_t kGroupBytes = Bits == QuantBits::int8 ? kGroup : kGroup / 2;
  std::size_t i = 0;
  for (; i + kGroup <= n; i += kGroup)
    encode_group<Bits>(x + i, inv, qmax8, codes + i / kGroup * kGroupBytes);
  if (i < n) {  // tail of the last block: zero lanes give zero codes
    StagedGroup<T> staged;
    std::memcpy(staged.bytes, x + i, (n - i) * sizeof(T));
    encode_group<Bits>(staged.data(), inv, qmax8, codes + i / kGroup * kGroupBytes);
    i += kGroup;
  }
  std::memset(codes + i / kGroup * kGroupBytes, 0, (block - i) / kGroup * kGroupBytes);  // padding groups
}

template <typename T>
TZ_QUANT_AVX2 QuantStats quantize_typed(const T* x, std::size_t count, std::uint8_t* q,
                                        const QuantOptions& opts) {
  QuantStats stats;
  const int qmax = quant_qmax(opts.bits);
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const std::uint32_t amax_bits = block_amax_bits(x + start, n);
    const bool nonfinite = amax_bits >= 0x7f800000u;
    float amax;
    std::memcpy(&amax, &amax_bits, sizeof amax);
    const auto s = choose_block_scale(amax, nonfinite, qmax);
    if (s.kind == ScaleKind::normal) {
      write_scale(q, s.scale);
      std::uint8_t* codes = q + sizeof(QuantBlockHeader);
      if (opts.bits == QuantBits::int8)
        encode_normal_block<QuantBits::int8>(x + start, n, s.inv, codes, opts.block_size);
      else
        encode_normal_block<QuantBits::int4>(x + start, n, s.inv, codes, opts.block_size);
    } else {
      encode_block_scalar(x + start, n, s, q, opts);
    }
    q += quant_block_bytes(opts);
    ++stats.blocks;
    stats.nonfinite_blocks += nonfinite ? 1 : 0;
  }
  return stats;
}

// The 32 values of code group i / 32 of a block (i a multiple of 32), code * scale, in v[0..3].
// A block's code bytes are always there in full (padding included), so these loads stay inside it.
template <QuantBits Bits>
TZ_QUANT_AVX2 inline void decode_group(const std::uint8_t* codes, std::size_t i, __m256 scale, __m256 v[4]) {
  __m128i q8[4];  // 8 codes each, as int8 in the low 8 bytes
  if constexpr (Bits == QuantBits::int8) {
    for (int j = 0; j < 4; ++j) q8[j] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i + 8 * j));
  } else {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i / 2));
    const __m128i nib = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(b, nib), hi = _mm_and_si128(_mm_srli_epi16(b, 4), nib);
    // Interleave low and high nibbles back into element order, then sign-extend: (u ^ 8) - 8.
    const __m128i eight = _mm_set1_epi8(8);
    const __m128i e0 = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);  // 0-15
    const __m128i e1 = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(lo, hi), eight), eight);  // 16-31
    q8[0] = e0;
    q8[1] = _mm_srli_si128(e0, 8);
    q8[2] = e1;
    q8[3] = _mm_srli_si128(e1, 8);
  }
  for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8[j])), scale);
}

// 8 finite fp32 values -> their bf16 bit patterns in the low half of each 32-bit lane (round to
// nearest even).
TZ_QUANT_AVX2 inline __m256i bf16_bits_rne(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
}

TZ_QUANT_AVX2 inline void store_group(float* y, const __m256 v[4]) {
  for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, v[j]);
}
TZ_QUANT_AVX2 inline void store_group(bf16* y, const __m256 v[4]) {
  for (int j = 0; j < 2; ++j) {
    // packus per 128-bit lane: [a0-3 b0-3 | a4-7 b4-7]; the qword permute restores element order.
    const __m256i ab = _mm256_packus_epi32(bf16_bits_rne(v[2 * j]), bf16_bits_rne(v[2 * j + 1]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 16 * j),
                        _mm256_permute4x64_epi64(ab, _MM_SHUFFLE(3, 1, 2, 0)));
  }
}

template <QuantBits Bits, typename T>
TZ_QUANT_AVX2 void decode_plain_block(const std::uint8_t* codes, std::size_t n, float scale_value, T* y) {
  const __m256 scale = _mm256_set1_ps(scale_value);
  __m256 v[4];
  std::size_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    decode_group<Bits>(codes, i, scale, v);
    store_group(y + i, v);
  }
  if (i < n) {  // tail of the last block
    StagedGroup<T> staged;
    decode_group<Bits>(codes, i, scale, v);
    store_group(staged.data(), v);
    std::memcpy(y + i, staged.bytes, (n - i) * sizeof(T));
  }
}

template <typename T>
TZ_QUANT_AVX2 void dequantize_typed(const std::uint8_t* q, std::size_t count, T* y,
                                    const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    if (!scale_is_plain(scale))
      decode_block_scalar(q, n, y + start, opts.bits);
    else if (opts.bits == QuantBits::int8)
      decode_plain_block<QuantBits::int8>(q + sizeof(QuantBlockHeader), n, scale, y + start);
    else
      decode_plain_block<QuantBits::int4>(q + sizeof(QuantBlockHeader), n, scale, y + start);
    q += quant_block_bytes(opts);
  }
}

template <QuantBits Bits>
TZ_QUANT_AVX2 void decode_add_plain_block(const std::uint8_t* codes, std::size_t n, float scale_value,
                                          float* acc) {
  const __m256 scale = _mm256_set1_ps(scale_value);
  __m256 v[4];
  std::size_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    decode_group<Bits>(codes, i, scale, v);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_add_ps(_mm256_loadu_ps(acc + i + 8 * j), v[j]);
    store_group(acc + i, v);
  }
  if (i < n) {  // tail of the last block
    StagedGroup<float> staged;
    std::memcpy(staged.bytes, acc + i, (n - i) * sizeof(float));
    decode_group<Bits>(codes, i, scale, v);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_add_ps(_mm256_loadu_ps(staged.data() + 8 * j), v[j]);
    store_group(staged.data(), v);
    std::memcpy(acc + i, staged.bytes, (n - i) * sizeof(float));
  }
}

TZ_QUANT_AVX2 void dequantize_add_blocks(const std::uint8_t* q, std::size_t count, float* acc,
                                         const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    if (!scale_is_plain(scale))
      decode_add_block_scalar(q, n, acc + start, opts.bits);
    else if (opts.bits == QuantBits::int8)
      decode_add_plain_block<QuantBits::int8>(q + sizeof(QuantBlockHeader), n, scale, acc + start);
    else
      decode_add_plain_block<QuantBits::int4>(q + sizeof(QuantBlockHeader), n, scale, acc + start);
    q += quant_block_bytes(opts);
  }
}

}  // namespace

namespace quant_detail {
const QuantKernels* avx2_kernels() {
  static constexpr QuantKernels k =
      make_quant_kernels<quantize_typed<float>, quantize_typed<bf16>, dequantize_typed<float>,
                         dequantize_typed<bf16>, dequantize_add_blocks>();
  return &k;
}
}  // namespace quant_detail

}  // namespace tz

#else  // not x86-64 with GCC/Clang: no AVX2 path

namespace tz::quant_detail {
const QuantKernels* avx2_kernels() {
  return nullptr;
}
}  // namespace tz::quant_detail

#endif
