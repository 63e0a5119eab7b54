// GPT-2 shapes (docs/model.md): the keys of a GPT-2 style config.json. A config is a pure value:
// it allocates nothing, so the planner can describe a 20B model with it.
//   n_layer      transformer blocks L
//   n_embd       model width C (any positive size that n_head divides)
//   n_head       attention heads H; head size C / H
//   n_positions  longest sequence T the position embedding holds
//   vocab_size   V (256 for the byte-level tokenizer)
// A Hugging Face GPT-2 config.json loads as published: its other keys either do not change the
// computation (accepted), are dropout (accepted and reported: tierzero trains without dropout), or
// must have the value tierzero computes with (activation_function gelu_new, layer_norm_epsilon 1e-5,
// initializer_range 0.02, scale_attn_weights true, tied embeddings, n_inner 4 n_embd, ...): any other
// value is an error naming the key and the value. docs/model.md lists them all.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
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
  // Parameters of the model (ParameterLayout::total_numel) from the shapes alone, without building a
  // layout: V C + P C + L (12 C^2 + 13 C) + 2 C, saturated at 2^64 - 1, so a reader can check a file's
  // size against a header before it builds anything the header's sizes would make huge.
  std::uint64_t parameter_count() const;
  bool operator==(const GptConfig&) const = default;

  // InputError naming `origin` and the key if a size is not positive or n_head does not divide n_embd.
  void validate(std::string_view origin) const;
  // Strict reading: unknown keys are errors. Besides the five shape keys, accepts the keys of Hugging
  // Face's GPT2Config (see above) and the preset keys "name", "aliases", "description", "source",
  // "note" (model/model_preset.hpp). `notes`, when given, receives one line per accepted key whose
  // value tierzero does not apply (dropout).
  static GptConfig from_json(const nlohmann::json& doc, std::string_view origin,
                             std::vector<std::string>* notes = nullptr);
  // A preset name (see preset_names()) or a path to a config.json: load_model's shape.
  static GptConfig load(std::string_view preset_or_path);
  static std::vector<std::string> preset_names();
  nlohmann::json to_json() const;
};

}  // namespace tz
