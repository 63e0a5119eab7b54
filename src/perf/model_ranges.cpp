#include "perf/model_ranges.hpp"

#include "model/parameter_layout.hpp"
#include "model/range_schedule.hpp"

namespace tz::perf {

ModelRanges model_ranges(const GptConfig& config) {
  const ParameterLayout layout(config);
  ModelRanges out;
  for (const auto& r : layout.ranges()) {
    out.names.push_back(r.name);
    out.numel.push_back(r.numel);
  }
  out.forward = forward_acquire_order(config);
  out.backward = backward_acquire_order(config);
  out.head = layout.head_range();
  out.final_ln = layout.final_ln_range();
  out.total_numel = layout.total_numel();
  out.modules.resize(layout.ranges().size());
  for (const auto& t : layout.tensors()) {
    const std::string module =
        t.name.find('.') == std::string::npos ? t.name : t.name.substr(0, t.name.rfind('.'));
    auto& mods = out.modules.at(t.range);
    if (mods.empty() || mods.back().name != module) mods.push_back(ModuleParams{module, {}});
    mods.back().tensor_numel.push_back(t.numel);
  }
  return out;
}

bool is_block_range(const GptConfig& config, int range) {
  return range >= ParameterLayout::block_range(0) &&
         range <= ParameterLayout::block_range(config.n_layer - 1);
}

}  // namespace tz::perf
