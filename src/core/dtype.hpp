// Element types that travel through collectives and quantizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tz {

enum class DType : std::uint8_t {
  f32,   // IEEE fp32
  bf16,  // bfloat16 (tz::bf16); reductions accumulate in fp32 and round once
  f64,   // for small exact reductions (norms, loss sums)
  u8,    // raw bytes (quantized codes); not reducible
};

constexpr std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::f64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f64:
      return "f64";
    case DType::u8:
      return "u8";
  }
  return "?";
}

}  // namespace tz
