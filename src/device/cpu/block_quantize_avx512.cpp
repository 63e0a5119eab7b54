// AVX-512 path of the block quantizer (F, BW, VL and the BF16 conversions), compiled with per-function
// target attributes so that the library still runs on CPUs without them (block_quantize_dispatch.cpp
// picks it only where the CPU has them). 16 lanes of fp32 per step; the tail of a block is handled
// with lane masks (masked-off lanes read as 0 and so produce the zero padding codes). Same results as
// the reference, bit for bit:
//   - block maximum: unsigned max of the bit patterns of |x| (also flags NaN/inf, >= 0x7f800000);
//   - codes: fp32 product x * (1/scale), converted with explicit round-to-nearest-even, clamped;
//   - values: code * scale with an explicitly rounded product, to bf16 by VCVTNEPS2BF16 (round to
//     nearest even; it flushes subnormals, but blocks handled here have scale 0 or normal, so every
//     value is 0 or normal).
// Blocks with a NaN/inf or a subnormal scale are handed to the scalar code (block_kernels.hpp).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "device/cpu/block_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>

#include "device/cpu/block_quantize.hpp"

#define TZ_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace tz {
namespace {

using namespace quant_detail;

constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

TZ_AVX512 inline __mmask16 tail_mask(std::size_t remaining) {
  return remaining >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1u);
}

// 16 elements as fp32; masked-off lanes are 0. A whole vector is a plain load: masked loads of every
// vector made fp32 quantize up to a quarter slower on an AMD EPYC.
TZ_AVX512 inline __m512 load16(const float* p, __mmask16 m) {
  return m == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
TZ_AVX512 inline __m512 load16(const bf16* p, __mmask16 m) {
  const __m256i h =
      m == 0xFFFF ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)) : _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// The block maximum is the first pass over the input, so it prefetches this far ahead: the hardware
// prefetcher alone did not keep up with the two passes per block (max, then codes), and measured
// quantize at 64 MiB ran about 1.4x faster with it (docs/quantization.md).
constexpr std::size_t kPrefetchBytes = 4096;

template <typename T>
TZ_AVX512 std::uint32_t block_amax_bits(const T* x, std::size_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (std::size_t line = 0; line < 32 * sizeof(T); line += 64)  // 2 lines of fp32, 1 of bf16
      _mm_prefetch(reinterpret_cast<const char*>(x + i) + line + kPrefetchBytes, _MM_HINT_T0);
    m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(load16(x + i, 0xFFFF)), abs_mask));
    m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(load16(x + i + 16, 0xFFFF)), abs_mask));
  }
  for (; i < n; i += 16)
    m0 = _mm512_max_epu32(m0,
                          _mm512_and_si512(_mm512_castps_si512(load16(x + i, tail_mask(n - i))), abs_mask));
  return _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
}

// 16 codes as int32 lanes: round-half-even(x * inv), clamped to [-qmax, qmax].
TZ_AVX512 inline __m512i codes16(__m512 v, __m512 inv, __m512i qmax) {
  const __m512i q = _mm512_cvt_roundps_epi32(_mm512_mul_round_ps(v, inv, kRne), kRne);
  return _mm512_max_epi32(_mm512_min_epi32(q, qmax), _mm512_sub_epi32(_mm512_setzero_si512(), qmax));
}

// INT4: pairs of int8 codes (even element low) packed into one byte each; 32 codes -> 16 bytes.
TZ_AVX512 inline __m128i pack_nibbles(__m128i a, __m128i b) {
  const __m128i lo = _mm_set1_epi16(0x000F), hi = _mm_set1_epi16(0x00F0);
  const __m128i ta = _mm_or_si128(_mm_and_si128(a, lo), _mm_and_si128(_mm_srli_epi16(a, 4), hi));
  const __m128i tb = _mm_or_si128(_mm_and_si128(b, lo), _mm_and_si128(_mm_srli_epi16(b, 4), hi));
  return _mm_packus_epi16(ta, tb);
}

template <typename T>
TZ_AVX512 void encode_normal_block(const T* x, std::size_t n, float inv_scale, std::uint8_t* codes,
                                   const QuantOptions& opts) {
  const __m512 inv = _mm512_set1_ps(inv_scale);
  const __m512i qmax = _mm512_set1_epi32(quant_qmax(opts.bits));
  const std::size_t block = opts.block_size;
  if (opts.bits == QuantBits::int8) {
    for (std::size_t i = 0; i < block; i += 16) {
      const __mmask16 m = i < n ? tail_mask(n - i) : __mmask16(0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                       _mm512_cvtsepi32_epi8(codes16(load16(x + i, m), inv, qmax)));
    }
    return;
  }
  for (std::size_t i = 0; i < block; i += 32) {
    const __mmask16 m0 = i < n ? tail_mask(n - i) : __mmask16(0);
    const __mmask16 m1 = i + 16 < n ? tail_mask(n - i - 16) : __mmask16(0);
    const __m128i a = _mm512_cvtsepi32_epi8(codes16(load16(x + i, m0), inv, qmax));
    const __m128i b = _mm512_cvtsepi32_epi8(codes16(load16(x + i + 16, m1), inv, qmax));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i / 2), pack_nibbles(a, b));
  }
}

template <typename T>
TZ_AVX512 QuantStats quantize_typed(const T* x, std::size_t count, std::uint8_t* q,
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
      encode_normal_block(x + start, n, s.inv, q + sizeof(QuantBlockHeader), opts);
    } else {
      encode_block_scalar(x + start, n, s, q, opts);
    }
    q += quant_block_bytes(opts);
    ++stats.blocks;
    stats.nonfinite_blocks += nonfinite ? 1 : 0;
  }
  return stats;
}

// 16 codes starting at element i of a block, as fp32 lanes. Code bytes of a block are always there in
// full (padding included), so whole-vector loads stay inside the block.
TZ_AVX512 inline __m512 load_codes16(const std::uint8_t* codes, std::size_t i, QuantBits bits) {
  if (bits == QuantBits::int8)
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i))));
  const __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i / 2)));
  const __m128i nibbles =
      _mm_or_si128(_mm_and_si128(w, _mm_set1_epi16(0x000F)), _mm_slli_epi16(_mm_srli_epi16(w, 4), 8));
  const __m512i q = _mm512_srai_epi32(_mm512_slli_epi32(_mm512_cvtepu8_epi32(nibbles), 28), 28);
  return _mm512_cvtepi32_ps(q);
}

TZ_AVX512 inline void store16(float* p, __mmask16 m, __m512 v) {
  _mm512_mask_storeu_ps(p, m, v);
}
TZ_AVX512 inline void store16(bf16* p, __mmask16 m, __m512 v) {
  const __m256bh h = _mm512_cvtneps_pbh(v);
  __m256i bits;
  std::memcpy(&bits, &h, sizeof bits);
  _mm256_mask_storeu_epi16(p, m, bits);
}

template <typename T>
TZ_AVX512 void dequantize_typed(const std::uint8_t* q, std::size_t count, T* y, const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    if (!scale_is_plain(scale)) {
      decode_block_scalar(q, n, y + start, opts.bits);
    } else {
      const __m512 s = _mm512_set1_ps(scale);
      const std::uint8_t* codes = q + sizeof(QuantBlockHeader);
      for (std::size_t i = 0; i < n; i += 16)
        store16(y + start + i, tail_mask(n - i),
                _mm512_mul_round_ps(load_codes16(codes, i, opts.bits), s, kRne));
    }
    q += quant_block_bytes(opts);
  }
}

TZ_AVX512 void dequantize_add_blocks(const std::uint8_t* q, std::size_t count, float* acc,
                                     const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    if (!scale_is_plain(scale)) {
      decode_add_block_scalar(q, n, acc + start, opts.bits);
    } else {
      const __m512 s = _mm512_set1_ps(scale);
      const std::uint8_t* codes = q + sizeof(QuantBlockHeader);
      // Whole vectors with plain loads and stores: a masked load and store of the same accumulator,
      // vector after vector, ran this loop 3x slower on an AMD EPYC (AVX-512) than on AVX2.
      std::size_t i = 0;
      for (; i + 16 <= n; i += 16) {
        float* a = acc + start + i;
        const __m512 v = _mm512_mul_round_ps(load_codes16(codes, i, opts.bits), s, kRne);
        _mm512_storeu_ps(a, _mm512_add_round_ps(_mm512_loadu_ps(a), v, kRne));
      }
      if (i < n) {
        const __mmask16 m = tail_mask(n - i);
        float* a = acc + start + i;
        const __m512 v = _mm512_mul_round_ps(load_codes16(codes, i, opts.bits), s, kRne);
        _mm512_mask_storeu_ps(a, m, _mm512_add_round_ps(_mm512_maskz_loadu_ps(m, a), v, kRne));
      }
    }
    q += quant_block_bytes(opts);
  }
}

}  // namespace

namespace quant_detail {
const QuantKernels* avx512_kernels() {
  static constexpr QuantKernels k =
      make_quant_kernels<quantize_typed<float>, quantize_typed<bf16>, dequantize_typed<float>,
                         dequantize_typed<bf16>, dequantize_add_blocks>();
  return &k;
}
}  // namespace quant_detail

}  // namespace tz

#else  // not x86-64 with GCC/Clang: no AVX-512 path

namespace tz::quant_detail {
const QuantKernels* avx512_kernels() {
  return nullptr;
}
}  // namespace tz::quant_detail

#endif
