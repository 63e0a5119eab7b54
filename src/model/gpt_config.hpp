// A decoder-only transformer described as data (docs/model.md): the five shapes of a GPT-2 style
// config.json and the per-layer choices that make GPT-2, Llama and GPT-NeoX three settings of one
// struct. A config is a pure value: it allocates nothing, so the planner can describe a 20B model.
//   n_layer      transformer blocks L
//   n_embd       model width C (any positive size that n_head divides)
//   n_head       attention heads H; head size D = C / H
//   n_positions  longest sequence T the model takes (the learned position table's rows)
//   vocab_size   V (256 for the byte-level tokenizer)
// The architecture fields default to GPT-2 (LayerNorm with bias, learned positions, biased
// attention, 4C GELU-tanh MLP, sequential residual, tied LM head), so a GPT-2 config sets none.
// Three readings, all strict (unknown keys are errors naming the key):
//  - a GPT-2 config.json (Hugging Face's GPT2Config keys; model_type "gpt2" or absent),
//  - tierzero's own keys for the architecture fields (no model_type; what to_json writes),
//  - a Hugging Face LlamaForCausalLM ("llama") or GPTNeoXForCausalLM ("gpt_neox") config.json
//    (model/hf_config.hpp).
// Keys that change the computation take only values tierzero describes exactly; any other value is
// an error naming the key and the value.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

// The Hugging Face model_type a config maps to; a label for messages (the fields decide the math).
enum class ModelFamily : std::uint8_t { gpt2, llama, gpt_neox };
enum class NormKind : std::uint8_t { layernorm, rmsnorm };
enum class PositionKind : std::uint8_t { learned, rotary };
// The MLP: two matrices C -> F -> C with GELU (tanh approximation or exact erf), or SwiGLU's three
// (gate and up C -> F, down F -> C; silu(gate) * up).
enum class MlpKind : std::uint8_t { gelu_tanh, gelu_exact, swiglu };
// sequential: x += attn(ln_1(x)); x += mlp(ln_2(x)).  parallel (GPT-NeoX): x += attn(ln_1(x)) + mlp(ln_2(x)).
enum class ResidualKind : std::uint8_t { sequential, parallel };
// Llama 3's rotary frequency rescaling ("rope_type": "llama3"); none = plain rotary.
enum class RopeScalingKind : std::uint8_t { none, llama3 };

std::string_view model_family_name(ModelFamily f);  // "gpt2", "llama", "gpt_neox"
std::string_view norm_kind_name(NormKind k);        // "layernorm", "rmsnorm"
std::string_view position_kind_name(PositionKind k);
std::string_view mlp_kind_name(MlpKind k);  // "gelu_tanh", "gelu_exact", "swiglu"
std::string_view residual_kind_name(ResidualKind k);

struct GptConfig {
  int n_layer = 4;
  int n_embd = 128;
  int n_head = 4;
  int n_positions = 128;
  int vocab_size = 256;

  // Architecture (defaults: GPT-2). A field that does not apply keeps its default (rope_* with
  // learned positions), so operator== compares models, not spellings.
  ModelFamily family = ModelFamily::gpt2;
  NormKind norm = NormKind::layernorm;
  bool norm_bias = true;  // LayerNorm's additive bias (RMSNorm has none)
  double norm_eps = 1e-5;
  PositionKind positions = PositionKind::learned;
  double rope_theta = 10000;     // rotary base
  double rotary_fraction = 1.0;  // of each head's dimensions rotated (Hugging Face half-split pairs)
  RopeScalingKind rope_scaling = RopeScalingKind::none;
  double rope_scaling_factor = 0;  // llama3: factor, low/high frequency factors, original context
  double rope_low_freq_factor = 0;
  double rope_high_freq_factor = 0;
  int rope_original_positions = 0;
  int n_kv_head = 0;  // key/value heads (grouped-query attention); 0 = n_head
  bool qkv_bias = true;
  bool attn_out_bias = true;
  MlpKind mlp = MlpKind::gelu_tanh;
  int mlp_hidden = 0;  // F; 0 = 4 n_embd (GELU MLPs; SwiGLU needs it given)
  bool mlp_bias = true;
  ResidualKind residual = ResidualKind::sequential;
  bool tied_embeddings = true;  // the LM head reuses wte; false: its own (V, C) matrix

  int head_size() const { return n_embd / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // In 64 bits: 4 n_embd of a header read before validation may not fit an int.
  long long mlp_width() const { return mlp_hidden > 0 ? mlp_hidden : 4LL * n_embd; }
  int rotary_dims() const;  // rotated dimensions of each head (0 with learned positions)
  // True when every field is GPT-2's (the architecture llm.c's file format holds).
  bool is_gpt2_architecture() const;
  // Parameters of the model (ParameterLayout::total_numel) from the shapes alone, without building a
  // layout (per family: docs/model.md), saturated at 2^64 - 1, so a reader can check a file's size
  // against a header before it builds anything the header's sizes would make huge. GPT-2:
  // V C + P C + L (12 C^2 + 13 C) + 2 C.
  std::uint64_t parameter_count() const;
  bool operator==(const GptConfig&) const = default;

  // InputError naming `origin`, the key and the value if a size is not positive, n_head does not
  // divide n_embd, n_kv_head does not divide n_head, a rotary setting is out of range, ...
  void validate(std::string_view origin) const;
  // Strict reading (see above). Preset files may also carry "name", "aliases", "description",
  // "source", "note" (model/model_preset.hpp). `notes`, when given, receives one line per accepted
  // key whose value tierzero does not apply (dropout).
  static GptConfig from_json(const nlohmann::json& doc, std::string_view origin,
                             std::vector<std::string>* notes = nullptr);
  // A preset name (see preset_names()) or a path to a config.json: load_model's shape.
  static GptConfig load(std::string_view preset_or_path);
  static std::vector<std::string> preset_names();
  // The five shape keys, plus tierzero's architecture keys when any field differs from GPT-2's
  // (so a GPT-2 config writes what it always did); from_json reads it back equal.
  nlohmann::json to_json() const;
};

// For the formats that hold GPT-2 alone (llm.c's model file, GPT-2's safetensors names): InputError
// naming `what` (the command or file), the family and the first piece GPT-2 does not have (RMSNorm,
// rotary positions, grouped-query attention, SwiGLU, parallel residual, untied head, ...).
void require_gpt2_layers(const GptConfig& config, std::string_view what);

}  // namespace tz
