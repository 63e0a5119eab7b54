// Reading a model's weights back from a parameter file (model/parameter_file.hpp writes them: raw
// little-endian fp32 in PATH, the config and size table in PATH.json). Every field is checked: the
// config, the dtype, the element count against the config's layout, every tensor's name, offset and
// shape, and the file's size; a mismatch is an InputError naming the file and the field, never a
// silently shifted tensor.
#pragma once

#include <string>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

struct ModelWeights {
  GptConfig config;
  std::vector<float> params;  // ParameterLayout(config) order, unpadded
  std::string origin;         // where they came from, for messages
};

ModelWeights read_parameter_file(const std::string& path);

}  // namespace tz
