#include "core/quant_format.hpp"

#include "core/error.hpp"

namespace tz {

void validate_quant_options(const QuantOptions& opts) {
  if (opts.bits != QuantBits::int8 && opts.bits != QuantBits::int4)
    fail_input("quantization: bits must be 8 or 4, got {}", static_cast<int>(opts.bits));
  if (opts.block_size < kQuantBlockAlign || opts.block_size > kMaxQuantBlockSize ||
      opts.block_size % kQuantBlockAlign != 0)
    fail_input("quantization: block_size must be a multiple of {} in [{}, {}], got {}", kQuantBlockAlign,
               kQuantBlockAlign, kMaxQuantBlockSize, opts.block_size);
}

}  // namespace tz
