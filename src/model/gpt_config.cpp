#include "model/gpt_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <span>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/known_keys.hpp"
#include "model/model_preset.hpp"

namespace tz {
void GptConfig::validate(std::string_view origin) const {
  auto positive = [&](const char* key, int v) {
    if (v <= 0) fail_input("model config {}: key '{}' must be a positive integer, got {}", origin, key, v);
  };
  positive("n_layer", n_layer);
  positive("n_embd", n_embd);
  positive("n_head", n_head);
  positive("n_positions", n_positions);
  positive("vocab_size", vocab_size);
  if (n_embd % n_head != 0)
    fail_input("model config {}: key 'n_head' ({}) must divide n_embd ({})", origin, n_head, n_embd);
}

std::uint64_t GptConfig::parameter_count() const {
  using u128 = unsigned __int128;
  const u128 C = static_cast<u128>(std::max(n_embd, 0)), L = static_cast<u128>(std::max(n_layer, 0));
  const u128 V = static_cast<u128>(std::max(vocab_size, 0)), P = static_cast<u128>(std::max(n_positions, 0));
  const u128 n = V * C + P * C + L * (12 * C * C + 13 * C) + 2 * C;  // < 2^128 for int sizes
  return n > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(n);
}

namespace {

// Hugging Face GPT2Config keys that do not change what is computed (tokenizer ids, inference and
// output switches, the sequence-classification head's summary_* settings, bookkeeping).
constexpr std::string_view kInformationalKeys[] = {"architectures",
                                                   "bos_token_id",
                                                   "eos_token_id",
                                                   "pad_token_id",
                                                   "sep_token_id",
                                                   "decoder_start_token_id",
                                                   "summary_type",
                                                   "summary_use_proj",
                                                   "summary_activation",
                                                   "summary_proj_to_labels",
                                                   "summary_first_dropout",
                                                   "task_specific_params",
                                                   "use_cache",
                                                   "torch_dtype",
                                                   "transformers_version",
                                                   "_name_or_path",
                                                   "name_or_path",
                                                   "id2label",
                                                   "label2id",
                                                   "problem_type",
                                                   "return_dict",
                                                   "output_hidden_states",
                                                   "output_attentions",
                                                   "torchscript",
                                                   "gradient_checkpointing",
                                                   "output_past",
                                                   "prefix",
                                                   "reorder_and_upcast_attn",
                                                   "tokenizer_class"};
constexpr std::string_view kDropoutKeys[] = {"attn_pdrop", "embd_pdrop", "resid_pdrop"};

bool one_of(std::string_view key, std::span<const std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

GptConfig GptConfig::from_json(const nlohmann::json& doc, std::string_view origin,
                               std::vector<std::string>* notes) {
  JsonFields f(doc, fmt::format("model config {}", origin));
  static const std::vector<std::string_view> computed = {"n_layer",
                                                         "n_embd",
                                                         "n_head",
                                                         "n_positions",
                                                         "vocab_size",
                                                         "n_ctx",
                                                         "model_type",
                                                         "name",
                                                         "aliases",
                                                         "description",
                                                         "source",
                                                         "note",
                                                         "activation_function",
                                                         "layer_norm_epsilon",
                                                         "initializer_range",
                                                         "scale_attn_weights",
                                                         "scale_attn_by_inverse_layer_idx",
                                                         "n_inner",
                                                         "tie_word_embeddings",
                                                         "add_cross_attention",
                                                         "is_decoder",
                                                         "is_encoder_decoder"};
  for (const auto& [key, value] : doc.items()) {
    if (one_of(key, computed) || one_of(key, kInformationalKeys) || one_of(key, kDropoutKeys)) continue;
    fail_input(
        "model config {}: unknown key '{}' ({}, dropout and Hugging Face's informational "
        "GPT2Config keys; see docs/model.md)",
        origin, text_excerpt(key), known_keys_text(key, computed));
  }
  if (f.has("name")) f.identifier("name");
  for (const char* key : {"description", "source", "note"})
    if (f.has(key)) f.str(key);  // a string, or an error naming the key
  if (f.has("aliases")) {
    const auto& a = f.raw("aliases");
    if (!a.is_array()) f.fail("aliases", "must be a list of names");
    for (const auto& v : a)
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64)
        f.fail("aliases", "must be a list of names of 1 to 64 bytes");
  }
  auto int_key = [&](const char* key) { return static_cast<int>(f.integer(key, 1, 1LL << 30)); };
  GptConfig c;
  c.n_layer = int_key("n_layer");
  c.n_embd = int_key("n_embd");
  c.n_head = int_key("n_head");
  c.n_positions = int_key("n_positions");
  c.vocab_size = int_key("vocab_size");
  if (f.has("n_ctx") && f.integer("n_ctx") != c.n_positions)
    f.fail("n_ctx", fmt::format("must equal n_positions ({}), got {}", c.n_positions, f.integer("n_ctx")));
  if (f.has("model_type") && f.str("model_type") != "gpt2")
    f.fail("model_type", fmt::format("must be \"gpt2\", got \"{}\"", text_excerpt(f.str("model_type"))));

  // Keys that change the computation: only the value tierzero computes with is accepted.
  auto unsupported = [&](const char* key, const std::string& value, const char* what) {
    f.fail(key, fmt::format("{} is not supported: tierzero computes {}", value, what));
  };
  if (f.has("activation_function")) {
    const std::string a = f.str("activation_function");
    if (a != "gelu_new" && a != "gelu_pytorch_tanh" && a != "gelu_fast")
      unsupported("activation_function", "\"" + text_excerpt(a) + "\"",
                  "GELU in its tanh form (gelu_new, gelu_pytorch_tanh or gelu_fast)");
  }
  if (f.has("layer_norm_epsilon") && f.number("layer_norm_epsilon") != 1e-5)
    unsupported("layer_norm_epsilon", fmt::format("{}", f.number("layer_norm_epsilon")),
                "LayerNorm with eps 1e-5");
  if (f.has("initializer_range") && f.number("initializer_range") != 0.02)
    unsupported("initializer_range", fmt::format("{}", f.number("initializer_range")),
                "GPT-2's initialisation, N(0, 0.02)");
  if (f.has("scale_attn_weights") && !f.boolean("scale_attn_weights"))
    unsupported("scale_attn_weights", "false", "attention scores scaled by 1/sqrt(head size)");
  if (f.has("scale_attn_by_inverse_layer_idx") && f.boolean("scale_attn_by_inverse_layer_idx"))
    unsupported("scale_attn_by_inverse_layer_idx", "true", "the same attention scale in every layer");
  if (f.has("n_inner") && !f.raw("n_inner").is_null() && f.integer("n_inner", 1, 1LL << 32) != 4LL * c.n_embd)
    unsupported("n_inner", fmt::format("{}", f.integer("n_inner")),
                fmt::format("an MLP of 4 n_embd = {} (or null)", 4LL * c.n_embd).c_str());
  if (f.has("tie_word_embeddings") && !f.boolean("tie_word_embeddings"))
    unsupported("tie_word_embeddings", "false", "the LM head tied to wte");
  for (const char* key : {"add_cross_attention", "is_encoder_decoder"})
    if (f.has(key) && f.boolean(key))
      unsupported(key, "true", "a decoder-only model without cross-attention");
  if (f.has("is_decoder")) f.boolean("is_decoder");  // GPT-2 is a decoder either way
  for (auto key : kDropoutKeys) {
    if (!f.has(key)) continue;
    const double p = f.number(key);
    if (!(p >= 0 && p < 1)) f.fail(key, fmt::format("must be a probability in [0, 1), got {}", p));
    if (p > 0 && notes) notes->push_back(fmt::format("{} {} (tierzero trains without dropout)", key, p));
  }
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"})
    if (f.has(key) && !f.raw(key).is_null()) f.integer(key, 0, c.vocab_size - 1);
  if (f.has("architectures")) {
    const auto& a = f.raw("architectures");
    bool ok = a.is_array() && !a.empty();
    for (const auto& v : a) ok = ok && v.is_string() && v.get<std::string>().rfind("GPT2", 0) == 0;
    if (!ok)
      f.fail("architectures",
             fmt::format("must list GPT-2 architectures (GPT2LMHeadModel, ...), got {}", json_excerpt(a)));
  }
  c.validate(origin);
  return c;
}

GptConfig GptConfig::load(std::string_view preset_or_path) {
  return load_model(preset_or_path).config;
}

std::vector<std::string> GptConfig::preset_names() {
  return model_preset_names();
}

nlohmann::json GptConfig::to_json() const {
  return {{"n_layer", n_layer},
          {"n_embd", n_embd},
          {"n_head", n_head},
          {"n_positions", n_positions},
          {"vocab_size", vocab_size}};
}

}  // namespace tz
