#include "quant/scratch_pool.hpp"

namespace tz {

ScratchPool& quant_scratch(Backend& device) {
  thread_local ScratchPool cpu(backend(DeviceKind::cpu)), emulated(backend(DeviceKind::emulated));
  return device.kind() == DeviceKind::cpu ? cpu : emulated;
}

}  // namespace tz
