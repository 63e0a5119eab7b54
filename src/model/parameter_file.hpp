// Parameter files: the flat fp32 buffer as raw little-endian floats in PATH, and PATH.json beside
// it with the model config and the size table (each tensor's name, offset and shape), so that a
// reader in another language (scripts/torch_reference.py) can cut it into tensors.
#pragma once

#include <string>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz {

// InputError naming the file when it cannot be written completely. Each of the two files appears whole
// or not at all (core/output_file.hpp).
void write_parameter_file(const std::string& path, const ParameterLayout& layout, const float* params);

// Refuses, before any work, a path a parameter file cannot be written to: a directory, a folder that
// does not exist, or a device, FIFO or socket (a parameter file is two files, PATH and PATH.json, so
// it is never a stream). InputError naming `option` and the path.
void check_parameter_file_path(const std::string& path, const std::string& option);

}  // namespace tz
