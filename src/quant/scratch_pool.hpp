// The scratch pools of the quantized collectives (device/scratch_pool.hpp), one per issuing thread
// and backend.
#pragma once

#include "device/scratch_pool.hpp"

namespace tz {

// The calling thread's pool of `backend`'s memory (one rank issues its collectives from one thread).
ScratchPool& quant_scratch(Backend& backend);

}  // namespace tz
