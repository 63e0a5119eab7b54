#include "quant/scratch_pool.hpp"

namespace tz {

ScratchPool& quant_scratch() {
  thread_local ScratchPool pool;
  return pool;
}

}  // namespace tz
