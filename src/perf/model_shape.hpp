// The cost model's name for a model preset (model/model_preset.hpp): one model format for every
// command, so `plan`, `simulate` and `train` accept the same names and files.
#pragma once

#include <string_view>
#include <vector>

#include "model/model_preset.hpp"

namespace tz::perf {

using ModelShape = ModelPreset;

inline ModelShape load_model_shape(std::string_view preset_or_path) {
  return load_model(preset_or_path);
}
inline ModelShape model_shape_from_json(const nlohmann::json& doc, std::string_view origin) {
  return model_preset_from_json(doc, origin);
}
inline std::vector<std::string> model_preset_names() {
  return tz::model_preset_names();
}

}  // namespace tz::perf
