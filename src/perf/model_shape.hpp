// A model preset for the cost model: a GPT shape (model/gpt_config.hpp) with its name and source.
// Presets live in models/*.json (each with its source) and are embedded in the binary; a user file
// with the same keys works the same way. Keys: the GPT-2 config.json shape keys that GptConfig reads
// (n_layer, n_embd, n_head, n_positions = the training sequence length, vocab_size) plus "name",
// "description", "source" and "note". Unknown keys are errors naming the key.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz::perf {

struct ModelShape {
  std::string name;
  std::string description;
  std::string source;
  GptConfig config;
  int seq_len() const { return config.n_positions; }
};

ModelShape model_shape_from_json(const nlohmann::json& doc, std::string_view origin);
// A preset name (see model_preset_names()) or a path to a JSON file.
ModelShape load_model_shape(std::string_view preset_or_path);
std::vector<std::string> model_preset_names();

}  // namespace tz::perf
