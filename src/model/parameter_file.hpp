// Parameter files: the flat fp32 buffer as raw little-endian floats in PATH, and PATH.json beside
// it with the model config and the size table (each tensor's name, offset and shape), so that a
// reader in another language (scripts/torch_reference.py) can cut it into tensors.
#pragma once

#include <string>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz {

// InputError naming the file when it cannot be written completely.
void write_parameter_file(const std::string& path, const ParameterLayout& layout, const float* params);

}  // namespace tz
