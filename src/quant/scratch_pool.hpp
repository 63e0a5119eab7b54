// The scratch pool of the quantized collectives (core/scratch_pool.hpp), one per issuing thread.
#pragma once

#include "core/scratch_pool.hpp"

namespace tz {

// The calling thread's pool (one rank issues its collectives from one thread).
ScratchPool& quant_scratch();

}  // namespace tz
