// Elementwise sums for reducing collectives (see reduce.hpp). The fast loops are written so that gcc
// vectorizes them at -O2/-O3: restrict-qualified pointers when nothing aliases, and a bf16 path that
// widens to fp32 with shifts (no branches except the NaN check, which compiles to a blend). Each loop
// is compiled twice, for the baseline ISA and (inlined into a function with a target attribute) for
// AVX2, which is chosen at run time when the CPU has it.
#include "device/cpu/reduce.hpp"

#include <cstdint>
#include <cstring>

#include "core/bf16.hpp"
#include "core/cpu_features.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

#define TZ_REDUCE_INLINE [[gnu::always_inline]] inline
#define TZ_REDUCE_AVX2 __attribute__((target("avx2")))

template <typename T>
TZ_REDUCE_INLINE void add_loop(T* out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// bf16 <-> fp32 through integer ops so the loop vectorizes; matches to_bf16 / to_float bit for bit.
TZ_REDUCE_INLINE float widen(std::uint16_t h) {
  const std::uint32_t u = float_bits_from_bf16_bits(h);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
TZ_REDUCE_INLINE std::uint16_t narrow(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return bf16_bits_from_float_bits(u);
}

TZ_REDUCE_INLINE void add_bf16(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                               std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = narrow(widen(a[i]) + widen(b[i]));
}

[[noreturn]] void not_reducible(DType dtype) {
  throw InputError(fmt::format("reduction: dtype {} is not reducible", dtype_name(dtype)));
}

// Inlined into each path, so its loops are vectorized for that path's ISA.
TZ_REDUCE_INLINE void add_any(void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return add_loop(static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b),
                      n);
    case DType::f64:
      return add_loop(static_cast<double*>(out), static_cast<const double*>(a), static_cast<const double*>(b),
                      n);
    case DType::bf16:
      return add_bf16(static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                      static_cast<const std::uint16_t*>(b), n);
    case DType::u8:
      break;
  }
  not_reducible(dtype);
}

}  // namespace

namespace reduce_detail {

bool have_avx2() {
  return cpu_features().avx2;
}

void reduce_add_portable(void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  add_any(out, a, b, n, dtype);
}

TZ_REDUCE_AVX2 void reduce_add_avx2(void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  add_any(out, a, b, n, dtype);
}

}  // namespace reduce_detail

bool dtype_reducible(DType dtype) {
  return dtype != DType::u8;
}

void reduce_add(void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  static const bool avx2 = reduce_detail::have_avx2();
  if (avx2) return reduce_detail::reduce_add_avx2(out, a, b, n, dtype);
  reduce_detail::reduce_add_portable(out, a, b, n, dtype);
}

void reduce_add_ref(void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::f32: {
        float x, y;
        std::memcpy(&x, static_cast<const float*>(a) + i, 4);
        std::memcpy(&y, static_cast<const float*>(b) + i, 4);
        const float s = x + y;
        std::memcpy(static_cast<float*>(out) + i, &s, 4);
        break;
      }
      case DType::f64: {
        double x, y;
        std::memcpy(&x, static_cast<const double*>(a) + i, 8);
        std::memcpy(&y, static_cast<const double*>(b) + i, 8);
        const double s = x + y;
        std::memcpy(static_cast<double*>(out) + i, &s, 8);
        break;
      }
      case DType::bf16: {
        bf16 x, y;
        std::memcpy(&x, static_cast<const bf16*>(a) + i, 2);
        std::memcpy(&y, static_cast<const bf16*>(b) + i, 2);
        const bf16 s = to_bf16(to_float(x) + to_float(y));
        std::memcpy(static_cast<bf16*>(out) + i, &s, 2);
        break;
      }
      case DType::u8:
        not_reducible(dtype);
    }
  }
}

}  // namespace tz
