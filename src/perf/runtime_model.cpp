#include "perf/runtime_model.hpp"

#include "core/error.hpp"

namespace tz::perf {

std::string_view runtime_name(Runtime r) {
  return r == Runtime::tierzero ? "tierzero" : "deepspeed";
}

Runtime parse_runtime(std::string_view text, std::string_view option) {
  if (text == "tierzero") return Runtime::tierzero;
  if (text == "deepspeed") return Runtime::deepspeed;
  fail_input("{}: must be tierzero or deepspeed, got '{}'", option, text);
}

std::vector<std::string> curve_libraries(Runtime r) {
  if (r == Runtime::tierzero) return {"tierzero"};
  return {"rccl", "nccl"};
}

}  // namespace tz::perf
