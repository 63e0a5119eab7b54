// Model shapes by name or file, the one model format of every command (`train`, `plan`, `simulate`):
// a config.json (model/gpt_config.hpp: GPT-2's keys, tierzero's architecture keys, or a Hugging Face
// Llama or GPT-NeoX config) that may also carry "name", "aliases", "description", "source", "note"
// and "seq" (the sequence length to plan with, at most n_positions). The presets are the files of
// models/ (each citing the source of its figures), embedded in the binary; a preset is found by its
// name or one of its aliases (gpt2 = gpt2-small, gpt-20b = gpt-neox-20b).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

struct ModelPreset {
  std::string name;  // the preset's name, or the file's path
  std::string description;
  std::string source;
  GptConfig config;
  std::vector<std::string> notes;  // accepted keys whose value tierzero does not apply (dropout)
  int seq = 0;                     // tokens per sequence a run trains on ("seq"); 0 = n_positions
  int seq_len() const { return seq > 0 ? seq : config.n_positions; }  // the planner's sequence length
};

// Reads a model file's JSON; `origin` names it in errors.
ModelPreset model_preset_from_json(const nlohmann::json& doc, std::string_view origin);
// A preset name or alias (model_preset_names()) or a path to a JSON file. InputError naming the
// value and the presets when it is neither, or naming the file and key when the file is bad.
ModelPreset load_model(std::string_view preset_or_path);
// The presets' names (aliases not included).
std::vector<std::string> model_preset_names();
// For messages and --help: "gpt-neox-20b (or gpt-20b), gpt-small, ...".
std::string describe_model_presets();

}  // namespace tz
