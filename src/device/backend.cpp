#include "device/backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "device/cpu_backend.hpp"
#include "device/emulated_backend.hpp"
#ifdef TZ_HAVE_CUDA
#include "device/cuda/cuda_backend.hpp"
#endif

namespace tz {

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::emulated:
      return "emulated";
    case DeviceKind::cuda:
      return "cuda";
  }
  return "?";
}

bool cuda_backend_built() {
#ifdef TZ_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<std::string> device_kind_names() {
  return {"cpu", "emulated", "cuda"};
}

namespace {
[[noreturn]] void fail_no_cuda(std::string_view what) {
  fail_input("{} 'cuda': this build has no CUDA backend (configure with -DTZ_CUDA=ON, docs/backends.md)",
             what);
}
}  // namespace

DeviceKind parse_device_kind(std::string_view name, std::string_view option) {
  if (name == "cpu") return DeviceKind::cpu;
  if (name == "emulated") return DeviceKind::emulated;
  if (name == "cuda") {
    if (!cuda_backend_built()) fail_no_cuda(option);
    return DeviceKind::cuda;
  }
  fail_input("{} '{}': expected one of {}", option, name, fmt::join(device_kind_names(), ", "));
}

Backend& backend(DeviceKind kind) {
  // Never destroyed: buffers of static objects may outlive any order of destruction.
  static CpuBackend* cpu = new CpuBackend;
  static EmulatedBackend* emulated = new EmulatedBackend;
  switch (kind) {
    case DeviceKind::cpu:
      return *cpu;
    case DeviceKind::emulated:
      return *emulated;
    case DeviceKind::cuda:
#ifdef TZ_HAVE_CUDA
      return cuda_backend();
#else
      fail_no_cuda("device");
#endif
  }
  TZ_CHECK(false, "device kind {}", static_cast<int>(kind));
  return *cpu;
}

}  // namespace tz
