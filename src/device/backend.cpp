#include "device/backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "device/cpu_backend.hpp"
#include "device/emulated_backend.hpp"

namespace tz {

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::emulated:
      return "emulated";
  }
  return "?";
}

std::vector<std::string> device_kind_names() {
  return {"cpu", "emulated"};
}

DeviceKind parse_device_kind(std::string_view name, std::string_view option) {
  if (name == "cpu") return DeviceKind::cpu;
  if (name == "emulated") return DeviceKind::emulated;
  fail_input("{} '{}': expected one of {}", option, name, fmt::join(device_kind_names(), ", "));
}

Backend& backend(DeviceKind kind) {
  // Never destroyed: buffers of static objects may outlive any order of destruction.
  static CpuBackend* cpu = new CpuBackend;
  static EmulatedBackend* emulated = new EmulatedBackend;
  return kind == DeviceKind::cpu ? static_cast<Backend&>(*cpu) : *emulated;
}

}  // namespace tz
