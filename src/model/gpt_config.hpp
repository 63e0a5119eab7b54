// GPT-2 shapes (DESIGN section 6): the keys of a GPT-2 style config.json. A config is a pure value:
// it allocates nothing, so the planner can describe a 20B model with it.
//   n_layer      transformer blocks L
//   n_embd       model width C (any positive size that n_head divides)
//   n_head       attention heads H; head size C / H
//   n_positions  longest sequence T the position embedding holds
//   vocab_size   V (256 for the byte-level tokenizer)
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace tz {

struct GptConfig {
  int n_layer = 4;
  int n_embd = 128;
  int n_head = 4;
  int n_positions = 128;
  int vocab_size = 256;

  int head_size() const { return n_embd / n_head; }
  bool operator==(const GptConfig&) const = default;

  // InputError naming `origin` and the key if a size is not positive or n_head does not divide n_embd.
  void validate(std::string_view origin) const;
  // Strict reading: unknown keys are errors. Besides the five shape keys, accepts the informational
  // GPT-2 keys "model_type" (must be "gpt2"), "n_ctx" (must equal n_positions) and "description".
  static GptConfig from_json(const nlohmann::json& doc, std::string_view origin);
  // A preset name (see preset_names()) or a path to a config.json.
  static GptConfig load(std::string_view preset_or_path);
  static std::vector<std::string> preset_names();
  nlohmann::json to_json() const;
};

}  // namespace tz
