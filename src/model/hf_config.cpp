#include "model/hf_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/known_keys.hpp"

namespace tz {
namespace {

constexpr std::string_view kPresetKeys[] = {"name", "aliases", "description", "source", "note", "seq"};

// Keys of a Hugging Face PretrainedConfig that do not change what is computed: token ids, dtype,
// bookkeeping, inference and output switches, the initialisation's spread (tierzero initialises the
// layers it computes its own way; the cost model does not depend on it).
constexpr std::string_view kHfInformationalKeys[] = {"architectures",     "bos_token_id",
                                                     "eos_token_id",      "pad_token_id",
                                                     "sep_token_id",      "decoder_start_token_id",
                                                     "torch_dtype",       "transformers_version",
                                                     "_name_or_path",     "name_or_path",
                                                     "tokenizer_class",   "use_cache",
                                                     "return_dict",       "output_hidden_states",
                                                     "output_attentions", "torchscript",
                                                     "id2label",          "label2id",
                                                     "problem_type",      "gradient_checkpointing",
                                                     "initializer_range"};

// Mixture-of-experts keys (Mixtral, Qwen2-MoE, ...): a different model, named as such.
constexpr std::string_view kMoeKeys[] = {"num_local_experts",
                                         "num_experts",
                                         "num_experts_per_tok",
                                         "moe_intermediate_size",
                                         "shared_expert_intermediate_size",
                                         "router_aux_loss_coef",
                                         "output_router_logits",
                                         "decoder_sparse_step",
                                         "router_jitter_noise"};

bool listed(std::string_view key, std::span<const std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Unknown keys (and MoE keys) are errors; `computed` are the family's own keys.
void check_hf_keys(const nlohmann::json& doc, std::string_view origin, std::string_view family,
                   const std::vector<std::string_view>& computed, std::span<const std::string_view> dropout) {
  for (const auto& [key, value] : doc.items()) {
    if (listed(key, kMoeKeys))
      fail_input(
          "model config {}: key '{}' ({}) is a mixture-of-experts setting, which tierzero does not "
          "describe",
          origin, key, json_excerpt(value));
    if (listed(key, computed) || listed(key, kHfInformationalKeys) || listed(key, kPresetKeys) ||
        listed(key, dropout))
      continue;
    fail_input("model config {}: unknown key '{}' for model_type \"{}\" ({}; see docs/model.md)", origin,
               text_excerpt(key), family, known_keys_text(key, computed));
  }
}

void note_dropout(const JsonFields& f, std::span<const std::string_view> keys,
                  std::vector<std::string>* notes) {
  for (auto key : keys) {
    if (!f.has(key) || f.raw(key).is_null()) continue;
    const double p = f.number(key);
    if (!(p >= 0 && p < 1)) f.fail(key, fmt::format("must be a probability in [0, 1), got {}", p));
    if (p > 0 && notes) notes->push_back(fmt::format("{} {} (tierzero trains without dropout)", key, p));
  }
}

void check_architectures(const JsonFields& f, std::string_view prefix, std::string_view example) {
  if (!f.has("architectures")) return;
  const auto& a = f.raw("architectures");
  bool ok = a.is_array() && !a.empty();
  for (const auto& v : a) ok = ok && v.is_string() && v.get<std::string>().rfind(prefix, 0) == 0;
  if (!ok)
    f.fail("architectures", fmt::format("must list {} architectures, got {}", example, json_excerpt(a)));
}

// The token ids: an id in [0, V), a list of them (Llama 3.1's eos_token_id) or null.
void check_token_ids(const JsonFields& f, int vocab_size) {
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (!f.has(key) || f.raw(key).is_null()) continue;
    const auto& v = f.raw(key);
    const auto ok = [&](const nlohmann::json& id) {
      return id.is_number_integer() && id.get<long long>() >= 0 && id.get<long long>() < vocab_size;
    };
    bool good = v.is_array() ? std::all_of(v.begin(), v.end(), ok) : ok(v);
    if (!good)
      f.fail(key, fmt::format("must be a token id in [0, {}) (or a list of them), got {}", vocab_size,
                              json_excerpt(v)));
  }
}

int shape_key(const JsonFields& f, const char* key) {
  return static_cast<int>(f.integer(key, 1, 1LL << 30));
}

// The keys both families share: sizes, head_dim, rope_scaling, the tied head.
GptConfig common_shapes(const JsonFields& f, bool tied_default) {
  GptConfig c;
  c.n_embd = shape_key(f, "hidden_size");
  c.n_layer = shape_key(f, "num_hidden_layers");
  c.n_head = shape_key(f, "num_attention_heads");
  c.mlp_hidden = shape_key(f, "intermediate_size");
  c.n_positions = shape_key(f, "max_position_embeddings");
  c.vocab_size = shape_key(f, "vocab_size");
  if (c.n_embd % c.n_head != 0)
    f.fail("num_attention_heads", fmt::format("({}) must divide hidden_size ({})", c.n_head, c.n_embd));
  if (f.has("head_dim") && !f.raw("head_dim").is_null() && f.integer("head_dim") != c.n_embd / c.n_head)
    f.fail("head_dim", fmt::format("{} is not supported: tierzero computes heads of hidden_size / "
                                   "num_attention_heads = {}",
                                   json_excerpt(f.raw("head_dim")), c.n_embd / c.n_head));
  c.tied_embeddings = f.boolean_or("tie_word_embeddings", tied_default);
  c.positions = PositionKind::rotary;
  read_rope_scaling(f, "rope_scaling", c);
  return c;
}

}  // namespace

bool is_preset_key(std::string_view key) {
  return listed(key, kPresetKeys);
}

void check_preset_keys(const JsonFields& f) {
  if (f.has("name")) f.identifier("name");
  if (f.has("seq")) f.integer("seq", 1, 1LL << 30);
  for (const char* key : {"description", "source", "note"})
    if (f.has(key)) f.str(key);  // a string, or an error naming the key
  if (f.has("aliases")) {
    const auto& a = f.raw("aliases");
    if (!a.is_array()) f.fail("aliases", "must be a list of names");
    for (const auto& v : a)
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64)
        f.fail("aliases", "must be a list of names of 1 to 64 bytes");
  }
}

void read_rope_scaling(const JsonFields& f, std::string_view key, GptConfig& c) {
  if (!f.has(key) || f.raw(key).is_null()) return;
  const JsonFields s(f.raw(key), fmt::format("{}: {}", f.where(), key));
  // Hugging Face spells the kind "rope_type" (older files: "type").
  const char* type_key = s.has("rope_type") ? "rope_type" : "type";
  const std::string type = s.has(type_key) ? s.str(type_key) : "";
  if (type != "llama3")
    f.fail(key, fmt::format("{} is not supported: tierzero describes rotary positions without scaling (null) "
                            "or with Llama 3's (\"rope_type\": \"llama3\")",
                            json_excerpt(f.raw(key))));
  s.allow_only({"rope_type", "type", "factor", "low_freq_factor", "high_freq_factor",
                "original_max_position_embeddings"});
  c.rope_scaling = RopeScalingKind::llama3;
  c.rope_scaling_factor = s.number("factor");
  c.rope_low_freq_factor = s.number("low_freq_factor");
  c.rope_high_freq_factor = s.number("high_freq_factor");
  c.rope_original_positions = static_cast<int>(s.integer("original_max_position_embeddings", 1, 1LL << 30));
}

nlohmann::json rope_scaling_json(const GptConfig& c) {
  if (c.rope_scaling == RopeScalingKind::none) return nullptr;
  return {{"rope_type", "llama3"},
          {"factor", c.rope_scaling_factor},
          {"low_freq_factor", c.rope_low_freq_factor},
          {"high_freq_factor", c.rope_high_freq_factor},
          {"original_max_position_embeddings", c.rope_original_positions}};
}

void canonicalize(GptConfig& c) {
  if (c.n_kv_head == c.n_head) c.n_kv_head = 0;
  if (c.mlp != MlpKind::swiglu && c.mlp_hidden == 4LL * c.n_embd) c.mlp_hidden = 0;
}

GptConfig llama_config_from_json(const nlohmann::json& doc, std::string_view origin,
                                 std::vector<std::string>* notes) {
  static const std::vector<std::string_view> computed = {"model_type",
                                                         "hidden_size",
                                                         "num_hidden_layers",
                                                         "num_attention_heads",
                                                         "num_key_value_heads",
                                                         "intermediate_size",
                                                         "max_position_embeddings",
                                                         "vocab_size",
                                                         "rope_theta",
                                                         "rope_scaling",
                                                         "rms_norm_eps",
                                                         "tie_word_embeddings",
                                                         "hidden_act",
                                                         "attention_bias",
                                                         "mlp_bias",
                                                         "head_dim",
                                                         "pretraining_tp",
                                                         "sliding_window",
                                                         "use_sliding_window"};
  static constexpr std::string_view dropout[] = {"attention_dropout"};
  check_hf_keys(doc, origin, "llama", computed, dropout);
  JsonFields f(doc, fmt::format("model config {}", origin));
  check_preset_keys(f);
  GptConfig c = common_shapes(f, /*tied_default=*/false);  // LlamaConfig's defaults throughout
  c.family = ModelFamily::llama;
  c.norm = NormKind::rmsnorm;
  c.norm_bias = false;
  c.norm_eps = f.number_or("rms_norm_eps", 1e-6);
  if (!(c.norm_eps > 0 && c.norm_eps < 1))
    f.fail("rms_norm_eps", fmt::format("must be in (0, 1), got {}", c.norm_eps));
  c.rope_theta = f.number_or("rope_theta", 10000);
  if (!(c.rope_theta > 1)) f.fail("rope_theta", fmt::format("must be a number > 1, got {}", c.rope_theta));
  c.n_kv_head = f.has("num_key_value_heads") && !f.raw("num_key_value_heads").is_null()
                    ? static_cast<int>(f.integer("num_key_value_heads", 1, 1LL << 30))
                    : c.n_head;
  if (c.n_head % c.n_kv_head != 0)
    f.fail("num_key_value_heads",
           fmt::format("({}) must divide num_attention_heads ({})", c.n_kv_head, c.n_head));
  const std::string act = f.str_or("hidden_act", "silu");
  if (act != "silu")
    f.fail("hidden_act",
           fmt::format("\"{}\" is not supported: a Llama MLP is SwiGLU (\"silu\")", text_excerpt(act)));
  c.mlp = MlpKind::swiglu;
  c.qkv_bias = c.attn_out_bias = f.boolean_or("attention_bias", false);
  c.mlp_bias = f.boolean_or("mlp_bias", false);
  if (f.has("pretraining_tp") && f.integer("pretraining_tp") != 1)
    f.fail("pretraining_tp", fmt::format("{} is not supported: tierzero computes each linear layer whole "
                                         "(pretraining_tp 1)",
                                         json_excerpt(f.raw("pretraining_tp"))));
  const bool window_used = f.has("use_sliding_window") ? f.boolean("use_sliding_window") : true;
  if (f.has("sliding_window") && !f.raw("sliding_window").is_null() && window_used)
    f.fail("sliding_window", fmt::format("{} is not supported: tierzero computes full causal attention",
                                         json_excerpt(f.raw("sliding_window"))));
  if (f.has("model_type") && f.str("model_type") != "llama") f.fail("model_type", "must be \"llama\"");
  check_architectures(f, "Llama", "Llama (LlamaForCausalLM, ...)");
  note_dropout(f, dropout, notes);
  check_token_ids(f, c.vocab_size);
  canonicalize(c);
  c.validate(origin);
  return c;
}

GptConfig gpt_neox_config_from_json(const nlohmann::json& doc, std::string_view origin,
                                    std::vector<std::string>* notes) {
  static const std::vector<std::string_view> computed = {"model_type",
                                                         "hidden_size",
                                                         "num_hidden_layers",
                                                         "num_attention_heads",
                                                         "intermediate_size",
                                                         "max_position_embeddings",
                                                         "vocab_size",
                                                         "rotary_emb_base",
                                                         "rope_theta",
                                                         "rotary_pct",
                                                         "layer_norm_eps",
                                                         "tie_word_embeddings",
                                                         "use_parallel_residual",
                                                         "hidden_act",
                                                         "attention_bias",
                                                         "rope_scaling",
                                                         "head_dim"};
  static constexpr std::string_view dropout[] = {"attention_dropout", "hidden_dropout", "classifier_dropout",
                                                 "attention_probs_dropout_prob", "hidden_dropout_prob"};
  check_hf_keys(doc, origin, "gpt_neox", computed, dropout);
  JsonFields f(doc, fmt::format("model config {}", origin));
  check_preset_keys(f);
  GptConfig c = common_shapes(f, /*tied_default=*/false);  // GPTNeoXConfig's defaults throughout
  c.family = ModelFamily::gpt_neox;
  c.norm = NormKind::layernorm;
  c.norm_bias = true;
  c.norm_eps = f.number_or("layer_norm_eps", 1e-5);
  if (!(c.norm_eps > 0 && c.norm_eps < 1))
    f.fail("layer_norm_eps", fmt::format("must be in (0, 1), got {}", c.norm_eps));
  // The rotary base: "rotary_emb_base" (as published), "rope_theta" (newer transformers); equal if both.
  c.rope_theta = f.number_or("rotary_emb_base", f.number_or("rope_theta", 10000));
  if (f.has("rotary_emb_base") && f.has("rope_theta") && f.number("rope_theta") != c.rope_theta)
    f.fail("rope_theta",
           fmt::format("({}) must equal rotary_emb_base ({})", f.number("rope_theta"), c.rope_theta));
  const char* base_key = f.has("rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
  if (!(c.rope_theta > 1)) f.fail(base_key, fmt::format("must be a number > 1, got {}", c.rope_theta));
  c.rotary_fraction = f.number_or("rotary_pct", 0.25);
  const int head = c.n_embd / c.n_head, dims = static_cast<int>(head * c.rotary_fraction);
  if (!(c.rotary_fraction > 0 && c.rotary_fraction <= 1) || dims < 2 || dims % 2 != 0)
    f.fail("rotary_pct", fmt::format("{} is not supported: it must be in (0, 1] and rotate an even number "
                                     ">= 2 of the head's {} dimensions (it rotates {})",
                                     c.rotary_fraction, head, dims));
  c.residual =
      f.boolean_or("use_parallel_residual", true) ? ResidualKind::parallel : ResidualKind::sequential;
  const std::string act = f.str_or("hidden_act", "gelu");
  if (act == "gelu")
    c.mlp = MlpKind::gelu_exact;
  else if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh")
    c.mlp = MlpKind::gelu_tanh;  // the same tanh approximation, written three ways
  else
    f.fail("hidden_act",
           fmt::format("\"{}\" is not supported: tierzero computes GELU exactly (\"gelu\") or in "
                       "its tanh form (\"gelu_new\", \"gelu_fast\", \"gelu_pytorch_tanh\")",
                       text_excerpt(act)));
  c.qkv_bias = c.attn_out_bias = f.boolean_or("attention_bias", true);
  c.mlp_bias = true;  // GPT-NeoX's dense_h_to_4h and dense_4h_to_h always carry biases
  if (f.has("model_type") && f.str("model_type") != "gpt_neox") f.fail("model_type", "must be \"gpt_neox\"");
  check_architectures(f, "GPTNeoX", "GPT-NeoX (GPTNeoXForCausalLM, ...)");
  note_dropout(f, dropout, notes);
  check_token_ids(f, c.vocab_size);
  canonicalize(c);
  c.validate(origin);
  return c;
}

}  // namespace tz
