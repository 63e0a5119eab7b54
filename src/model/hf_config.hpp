// Hugging Face config.json files of the Llama ("llama", LlamaForCausalLM) and GPT-NeoX ("gpt_neox",
// GPTNeoXForCausalLM) families as GptConfig values, read strictly (docs/model.md lists every key):
//  - the keys that shape the computation map to the config's fields (hidden_size -> n_embd,
//    num_key_value_heads -> n_kv_head, rotary_pct -> rotary_fraction, ...), absent ones taking
//    Hugging Face's defaults for that family;
//  - keys that do not change the computation (token ids, dtype, architectures, versions,
//    initializer_range, ...) are accepted; dropout is accepted and reported when above 0;
//  - values tierzero cannot describe exactly (a rope_scaling other than llama3's, a sliding window
//    in use, mixture-of-experts keys, a head_dim other than hidden_size / num_attention_heads, an
//    activation outside the family's, ...) and unknown keys are InputErrors naming key and value.
// Also the helpers every config reader shares: the preset keys and the rope_scaling object.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

class JsonFields;

GptConfig llama_config_from_json(const nlohmann::json& doc, std::string_view origin,
                                 std::vector<std::string>* notes);
GptConfig gpt_neox_config_from_json(const nlohmann::json& doc, std::string_view origin,
                                    std::vector<std::string>* notes);

// "name", "aliases", "description", "source", "note", "seq" (the sequence length `plan` and
// `simulate` price, when not n_positions): what a preset file adds to a config.
bool is_preset_key(std::string_view key);
void check_preset_keys(const JsonFields& f);  // their types: an InputError naming the key

// `key` (null, or {"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
// "original_max_position_embeddings"}) into c.rope_scaling and its factors; any other rope_type is
// an InputError naming it. The form to_json writes back.
void read_rope_scaling(const JsonFields& f, std::string_view key, GptConfig& c);
nlohmann::json rope_scaling_json(const GptConfig& c);

// Stores the fields that equal their defaults as the defaults (n_kv_head == n_head as 0, a GELU
// MLP of 4 n_embd as 0), so that operator== compares models, not spellings.
void canonicalize(GptConfig& c);

}  // namespace tz
