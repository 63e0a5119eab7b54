#include "model/gpt_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <span>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/known_keys.hpp"
#include "model/hf_config.hpp"
#include "model/model_preset.hpp"

namespace tz {
namespace {

template <typename E, std::size_t N>
std::string_view name_of(E value, const std::string_view (&names)[N]) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : std::string_view("?");
}
constexpr std::string_view kFamilyNames[] = {"gpt2", "llama", "gpt_neox"};
constexpr std::string_view kNormNames[] = {"layernorm", "rmsnorm"};
constexpr std::string_view kPositionNames[] = {"learned", "rotary"};
constexpr std::string_view kMlpNames[] = {"gelu_tanh", "gelu_exact", "swiglu"};
constexpr std::string_view kResidualNames[] = {"sequential", "parallel"};

}  // namespace

std::string_view model_family_name(ModelFamily f) {
  return name_of(f, kFamilyNames);
}
std::string_view norm_kind_name(NormKind k) {
  return name_of(k, kNormNames);
}
std::string_view position_kind_name(PositionKind k) {
  return name_of(k, kPositionNames);
}
std::string_view mlp_kind_name(MlpKind k) {
  return name_of(k, kMlpNames);
}
std::string_view residual_kind_name(ResidualKind k) {
  return name_of(k, kResidualNames);
}

int GptConfig::rotary_dims() const {
  if (positions != PositionKind::rotary || n_head <= 0) return 0;
  return static_cast<int>(head_size() * rotary_fraction);  // Hugging Face: int(head_size * rotary_pct)
}

bool GptConfig::is_gpt2_architecture() const {
  // The rope_* fields need no check: validate() holds them at their defaults with learned positions.
  return norm == NormKind::layernorm && norm_bias && norm_eps == GptConfig{}.norm_eps &&
         positions == PositionKind::learned && kv_heads() == n_head && qkv_bias && attn_out_bias &&
         mlp == MlpKind::gelu_tanh && mlp_width() == 4LL * n_embd && mlp_bias &&
         residual == ResidualKind::sequential && tied_embeddings;
}

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
  if (n_kv_head < 0 || n_kv_head > n_head || n_head % kv_heads() != 0)
    fail_input("model config {}: key 'n_kv_head' ({}) must divide n_head ({})", origin, n_kv_head, n_head);
  if (!(norm_eps > 0 && norm_eps < 1))
    fail_input("model config {}: key 'norm_eps' must be in (0, 1), got {}", origin, norm_eps);
  if (norm == NormKind::rmsnorm && norm_bias)
    fail_input("model config {}: key 'norm_bias' must be false with norm \"rmsnorm\" (RMSNorm has no bias)",
               origin);
  if (mlp_hidden < 0)
    fail_input("model config {}: key 'mlp_hidden' must be a positive integer, got {}", origin, mlp_hidden);
  if (mlp == MlpKind::swiglu && mlp_hidden == 0)
    fail_input("model config {}: key 'mlp_hidden' is needed with mlp \"swiglu\" (its intermediate size)",
               origin);
  const GptConfig defaults;
  if (positions == PositionKind::learned) {
    if (rope_theta != defaults.rope_theta || rotary_fraction != defaults.rotary_fraction ||
        rope_scaling != RopeScalingKind::none)
      fail_input(
          "model config {}: keys 'rope_theta', 'rotary_fraction' and 'rope_scaling' apply to rotary "
          "positions only (positions is \"learned\")",
          origin);
    return;
  }
  if (!(rope_theta > 1))
    fail_input("model config {}: key 'rope_theta' must be a number > 1, got {}", origin, rope_theta);
  if (!(rotary_fraction > 0 && rotary_fraction <= 1))
    fail_input("model config {}: key 'rotary_fraction' must be in (0, 1], got {}", origin, rotary_fraction);
  const int dims = rotary_dims();
  if (dims < 2 || dims % 2 != 0)
    fail_input(
        "model config {}: key 'rotary_fraction' ({}) of the head size {} rotates {} dimensions; rotary "
        "positions need an even number >= 2",
        origin, rotary_fraction, head_size(), dims);
  if (rope_scaling == RopeScalingKind::llama3 &&
      !(rope_scaling_factor >= 1 && rope_low_freq_factor > 0 &&
        rope_high_freq_factor > rope_low_freq_factor && rope_original_positions > 0))
    fail_input(
        "model config {}: key 'rope_scaling' (llama3) needs factor >= 1 (got {}), 0 < low_freq_factor (got "
        "{}) < high_freq_factor (got {}) and original_max_position_embeddings > 0 (got {})",
        origin, rope_scaling_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_positions);
  if (rope_scaling == RopeScalingKind::none && (rope_scaling_factor != 0 || rope_low_freq_factor != 0 ||
                                                rope_high_freq_factor != 0 || rope_original_positions != 0))
    fail_input("model config {}: rope scaling factors are set but 'rope_scaling' is none", origin);
}

std::uint64_t GptConfig::parameter_count() const {
  using u128 = unsigned __int128;
  auto u = [](long long v) { return static_cast<u128>(std::max(v, 0LL)); };
  const u128 C = u(n_embd), L = u(n_layer), V = u(vocab_size), P = u(n_positions);
  const u128 D = n_head > 0 ? u(n_embd / n_head) : 0, H = u(n_head), KV = u(kv_heads()), F = u(mlp_width());
  const u128 norm_params = norm_bias ? 2 * C : C;
  const u128 qkv = (H + 2 * KV) * D;  // query, key and value rows
  u128 block = 2 * norm_params + qkv * C + (qkv_bias ? qkv : 0) + C * H * D + (attn_out_bias ? C : 0);
  block +=
      mlp == MlpKind::swiglu ? 3 * F * C + (mlp_bias ? 2 * F + C : 0) : 2 * F * C + (mlp_bias ? F + C : 0);
  const u128 embeddings = V * C + (positions == PositionKind::learned ? P * C : 0);
  const u128 n = embeddings + L * block + norm_params + (tied_embeddings ? 0 : V * C);  // < 2^128
  return n > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(n);
}

void require_gpt2_layers(const GptConfig& c, std::string_view what) {
  if (c.is_gpt2_architecture()) return;
  const GptConfig gpt2;
  std::string piece;
  if (c.norm == NormKind::rmsnorm)
    piece = "RMSNorm";
  else if (!c.norm_bias)
    piece = "LayerNorm without bias";
  else if (c.norm_eps != gpt2.norm_eps)
    piece = fmt::format("LayerNorm eps {} (the layers use 1e-5)", c.norm_eps);
  else if (c.positions == PositionKind::rotary)
    piece = "rotary positions";
  else if (c.kv_heads() != c.n_head)
    piece = fmt::format("grouped-query attention ({} key/value heads for {} heads)", c.kv_heads(), c.n_head);
  else if (!c.qkv_bias || !c.attn_out_bias)
    piece = "attention without biases";
  else if (c.mlp == MlpKind::swiglu)
    piece = "the SwiGLU MLP";
  else if (c.mlp == MlpKind::gelu_exact)
    piece = "exact (erf) GELU";
  else if (c.mlp_width() != 4LL * c.n_embd)
    piece = fmt::format("an MLP of width {} (the layers use 4 n_embd = {})", c.mlp_width(), 4LL * c.n_embd);
  else if (!c.mlp_bias)
    piece = "an MLP without biases";
  else if (c.residual == ResidualKind::parallel)
    piece = "the parallel residual";
  else
    piece = "an untied output embedding";
  fail_input("{}: the format holds GPT-2's architecture alone, and the {} model has {}", what,
             model_family_name(c.family), piece);
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

// tierzero's own keys for the architecture fields (GptConfig's names), written by to_json.
constexpr std::string_view kArchitectureKeys[] = {
    "family",          "norm",         "norm_bias", "norm_eps",       "positions",     "rope_theta",
    "rotary_fraction", "rope_scaling", "n_kv_head", "qkv_bias",       "attn_out_bias", "mlp",
    "mlp_hidden",      "mlp_bias",     "residual",  "tied_embeddings"};
// GPT2Config keys that set an architecture field: with tierzero's keys they would say it twice.
constexpr std::string_view kGpt2ArchitectureKeys[] = {"activation_function", "layer_norm_epsilon", "n_inner",
                                                      "tie_word_embeddings"};

template <typename E, std::size_t N>
E enum_key(const JsonFields& f, const char* key, const std::string_view (&names)[N]) {
  const std::string v = f.str(key);
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == v) return static_cast<E>(i);
  std::string known;
  for (auto n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  f.fail(key, fmt::format("must be one of {}, got \"{}\"", known, text_excerpt(v)));
}

// The architecture fields from tierzero's keys; absent keys keep GPT-2's values.
void read_architecture_keys(const JsonFields& f, GptConfig& c) {
  if (f.has("family")) c.family = enum_key<ModelFamily>(f, "family", kFamilyNames);
  if (f.has("norm")) c.norm = enum_key<NormKind>(f, "norm", kNormNames);
  c.norm_bias = f.boolean_or("norm_bias", c.norm == NormKind::layernorm);
  c.norm_eps = f.number_or("norm_eps", c.norm_eps);
  if (f.has("positions")) c.positions = enum_key<PositionKind>(f, "positions", kPositionNames);
  c.rope_theta = f.number_or("rope_theta", c.rope_theta);
  c.rotary_fraction = f.number_or("rotary_fraction", c.rotary_fraction);
  read_rope_scaling(f, "rope_scaling", c);
  c.n_kv_head = static_cast<int>(f.integer_or("n_kv_head", 0, 1, 1LL << 30));
  c.qkv_bias = f.boolean_or("qkv_bias", true);
  c.attn_out_bias = f.boolean_or("attn_out_bias", true);
  if (f.has("mlp")) c.mlp = enum_key<MlpKind>(f, "mlp", kMlpNames);
  c.mlp_hidden = static_cast<int>(f.integer_or("mlp_hidden", 0, 1, 1LL << 30));
  c.mlp_bias = f.boolean_or("mlp_bias", true);
  if (f.has("residual")) c.residual = enum_key<ResidualKind>(f, "residual", kResidualNames);
  c.tied_embeddings = f.boolean_or("tied_embeddings", true);
  canonicalize(c);
}

}  // namespace

GptConfig GptConfig::from_json(const nlohmann::json& doc, std::string_view origin,
                               std::vector<std::string>* notes) {
  JsonFields f(doc, fmt::format("model config {}", origin));
  const std::string model_type = f.has("model_type") ? f.str("model_type") : "";
  if (model_type == "llama") return llama_config_from_json(doc, origin, notes);
  if (model_type == "gpt_neox") return gpt_neox_config_from_json(doc, origin, notes);
  if (!model_type.empty() && model_type != "gpt2")
    f.fail("model_type",
           fmt::format("must be \"gpt2\", \"llama\" or \"gpt_neox\", got \"{}\"", text_excerpt(model_type)));
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
                                                         "seq",
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
  bool own_keys = false;
  for (const auto& [key, value] : doc.items()) {
    if (one_of(key, kArchitectureKeys)) {
      own_keys = true;
      continue;
    }
    if (one_of(key, computed) || one_of(key, kInformationalKeys) || one_of(key, kDropoutKeys)) continue;
    fail_input(
        "model config {}: unknown key '{}' ({}, tierzero's architecture keys, dropout and Hugging Face's "
        "informational GPT2Config keys; see docs/model.md)",
        origin, text_excerpt(key), known_keys_text(key, computed));
  }
  if (own_keys) {
    if (!model_type.empty())
      f.fail("model_type", "must be absent with tierzero's architecture keys (family, norm, mlp, ...)");
    for (auto key : kGpt2ArchitectureKeys)
      if (f.has(key))
        f.fail(key,
               "is GPT2Config's spelling of an architecture field: with tierzero's architecture keys "
               "(family, norm, mlp, ...) use those alone");
  }
  check_preset_keys(f);
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
  if (own_keys) read_architecture_keys(f, c);
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
  nlohmann::json j = {{"n_layer", n_layer},
                      {"n_embd", n_embd},
                      {"n_head", n_head},
                      {"n_positions", n_positions},
                      {"vocab_size", vocab_size}};
  if (*this == GptConfig{.n_layer = n_layer,
                         .n_embd = n_embd,
                         .n_head = n_head,
                         .n_positions = n_positions,
                         .vocab_size = vocab_size})
    return j;  // GPT-2: the five shapes, as always
  j["family"] = model_family_name(family);
  j["norm"] = norm_kind_name(norm);
  j["norm_bias"] = norm_bias;
  j["norm_eps"] = norm_eps;
  j["positions"] = position_kind_name(positions);
  if (positions == PositionKind::rotary) {
    j["rope_theta"] = rope_theta;
    j["rotary_fraction"] = rotary_fraction;
    j["rope_scaling"] = rope_scaling_json(*this);
  }
  j["n_kv_head"] = kv_heads();
  j["qkv_bias"] = qkv_bias;
  j["attn_out_bias"] = attn_out_bias;
  j["mlp"] = mlp_kind_name(mlp);
  j["mlp_hidden"] = mlp_width();
  j["mlp_bias"] = mlp_bias;
  j["residual"] = residual_kind_name(residual);
  j["tied_embeddings"] = tied_embeddings;
  return j;
}

}  // namespace tz
