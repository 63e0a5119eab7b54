#include "checkpoint/hf_tensor_names.hpp"

#include <fmt/format.h>

#include <span>

namespace tz {
namespace {

// When a table entry is in the file: always, or when the model has the tensor it maps.
enum class Presence : std::uint8_t { always, norm_bias, qkv_bias, attn_out_bias, mlp_bias, untied_head };

struct Entry {
  const char* file;
  const char* tierzero;  // within a block: without the "h.{i}." prefix
  RowMap map;
  Presence presence;
};

struct FamilyTable {
  const char* layer_prefix;  // of block i's file names, a format string of i
  std::span<const Entry> head, block, tail;
};

constexpr auto kAlways = Presence::always;

constexpr Entry kGpt2Head[] = {{"wte.weight", "wte", RowMap::same, kAlways},
                               {"wpe.weight", "wpe", RowMap::same, kAlways}};
constexpr Entry kGpt2Block[] = {{"ln_1.weight", "ln_1.weight", RowMap::same, kAlways},
                                {"ln_1.bias", "ln_1.bias", RowMap::same, kAlways},
                                {"attn.c_attn.weight", "attn.qkv.weight", RowMap::transposed, kAlways},
                                {"attn.c_attn.bias", "attn.qkv.bias", RowMap::same, kAlways},
                                {"attn.c_proj.weight", "attn.proj.weight", RowMap::transposed, kAlways},
                                {"attn.c_proj.bias", "attn.proj.bias", RowMap::same, kAlways},
                                {"ln_2.weight", "ln_2.weight", RowMap::same, kAlways},
                                {"ln_2.bias", "ln_2.bias", RowMap::same, kAlways},
                                {"mlp.c_fc.weight", "mlp.fc.weight", RowMap::transposed, kAlways},
                                {"mlp.c_fc.bias", "mlp.fc.bias", RowMap::same, kAlways},
                                {"mlp.c_proj.weight", "mlp.proj.weight", RowMap::transposed, kAlways},
                                {"mlp.c_proj.bias", "mlp.proj.bias", RowMap::same, kAlways}};
constexpr Entry kGpt2Tail[] = {{"ln_f.weight", "ln_f.weight", RowMap::same, kAlways},
                               {"ln_f.bias", "ln_f.bias", RowMap::same, kAlways}};

constexpr Entry kLlamaHead[] = {{"model.embed_tokens.weight", "wte", RowMap::same, kAlways}};
constexpr Entry kLlamaBlock[] = {
    {"input_layernorm.weight", "ln_1.weight", RowMap::same, kAlways},
    {"input_layernorm.bias", "ln_1.bias", RowMap::same, Presence::norm_bias},
    {"self_attn.q_proj.weight", "attn.qkv.weight", RowMap::query_rows, kAlways},
    {"self_attn.q_proj.bias", "attn.qkv.bias", RowMap::query_rows, Presence::qkv_bias},
    {"self_attn.k_proj.weight", "attn.qkv.weight", RowMap::key_rows, kAlways},
    {"self_attn.k_proj.bias", "attn.qkv.bias", RowMap::key_rows, Presence::qkv_bias},
    {"self_attn.v_proj.weight", "attn.qkv.weight", RowMap::value_rows, kAlways},
    {"self_attn.v_proj.bias", "attn.qkv.bias", RowMap::value_rows, Presence::qkv_bias},
    {"self_attn.o_proj.weight", "attn.proj.weight", RowMap::same, kAlways},
    {"self_attn.o_proj.bias", "attn.proj.bias", RowMap::same, Presence::attn_out_bias},
    {"post_attention_layernorm.weight", "ln_2.weight", RowMap::same, kAlways},
    {"post_attention_layernorm.bias", "ln_2.bias", RowMap::same, Presence::norm_bias},
    {"mlp.gate_proj.weight", "mlp.fc.weight", RowMap::gate_rows, kAlways},
    {"mlp.gate_proj.bias", "mlp.fc.bias", RowMap::gate_rows, Presence::mlp_bias},
    {"mlp.up_proj.weight", "mlp.fc.weight", RowMap::up_rows, kAlways},
    {"mlp.up_proj.bias", "mlp.fc.bias", RowMap::up_rows, Presence::mlp_bias},
    {"mlp.down_proj.weight", "mlp.proj.weight", RowMap::same, kAlways},
    {"mlp.down_proj.bias", "mlp.proj.bias", RowMap::same, Presence::mlp_bias}};
constexpr Entry kLlamaTail[] = {{"model.norm.weight", "ln_f.weight", RowMap::same, kAlways},
                                {"model.norm.bias", "ln_f.bias", RowMap::same, Presence::norm_bias},
                                {"lm_head.weight", "lm_head.weight", RowMap::same, Presence::untied_head}};

constexpr Entry kNeoxHead[] = {{"gpt_neox.embed_in.weight", "wte", RowMap::same, kAlways}};
constexpr Entry kNeoxBlock[] = {
    {"input_layernorm.weight", "ln_1.weight", RowMap::same, kAlways},
    {"input_layernorm.bias", "ln_1.bias", RowMap::same, Presence::norm_bias},
    {"post_attention_layernorm.weight", "ln_2.weight", RowMap::same, kAlways},
    {"post_attention_layernorm.bias", "ln_2.bias", RowMap::same, Presence::norm_bias},
    {"attention.query_key_value.weight", "attn.qkv.weight", RowMap::heads_interleaved, kAlways},
    {"attention.query_key_value.bias", "attn.qkv.bias", RowMap::heads_interleaved, Presence::qkv_bias},
    {"attention.dense.weight", "attn.proj.weight", RowMap::same, kAlways},
    {"attention.dense.bias", "attn.proj.bias", RowMap::same, Presence::attn_out_bias},
    {"mlp.dense_h_to_4h.weight", "mlp.fc.weight", RowMap::same, kAlways},
    {"mlp.dense_h_to_4h.bias", "mlp.fc.bias", RowMap::same, Presence::mlp_bias},
    {"mlp.dense_4h_to_h.weight", "mlp.proj.weight", RowMap::same, kAlways},
    {"mlp.dense_4h_to_h.bias", "mlp.proj.bias", RowMap::same, Presence::mlp_bias}};
constexpr Entry kNeoxTail[] = {
    {"gpt_neox.final_layer_norm.weight", "ln_f.weight", RowMap::same, kAlways},
    {"gpt_neox.final_layer_norm.bias", "ln_f.bias", RowMap::same, Presence::norm_bias},
    {"embed_out.weight", "lm_head.weight", RowMap::same, Presence::untied_head}};

const FamilyTable& table_of(ModelFamily f) {
  static const FamilyTable gpt2{"h.{}.", kGpt2Head, kGpt2Block, kGpt2Tail};
  static const FamilyTable llama{"model.layers.{}.", kLlamaHead, kLlamaBlock, kLlamaTail};
  static const FamilyTable neox{"gpt_neox.layers.{}.", kNeoxHead, kNeoxBlock, kNeoxTail};
  switch (f) {
    case ModelFamily::llama:
      return llama;
    case ModelFamily::gpt_neox:
      return neox;
    case ModelFamily::gpt2:
      break;
  }
  return gpt2;
}

bool present(Presence p, const GptConfig& c) {
  switch (p) {
    case Presence::always:
      return true;
    case Presence::norm_bias:
      return c.norm_bias;
    case Presence::qkv_bias:
      return c.qkv_bias;
    case Presence::attn_out_bias:
      return c.attn_out_bias;
    case Presence::mlp_bias:
      return c.mlp_bias;
    case Presence::untied_head:
      return !c.tied_embeddings;
  }
  return false;
}

std::uint64_t count_present(std::span<const Entry> entries, const GptConfig& c) {
  std::uint64_t n = 0;
  for (const Entry& e : entries) n += present(e.presence, c) ? 1 : 0;
  return n;
}

}  // namespace

void for_each_hf_tensor_name(const GptConfig& model, const std::function<bool(const HfTensorName&)>& visit) {
  const FamilyTable& t = table_of(model.family);
  auto walk = [&](std::span<const Entry> entries, const std::string& file_prefix,
                  const std::string& tz_prefix) {
    for (const Entry& e : entries)
      if (present(e.presence, model) && !visit({file_prefix + e.file, tz_prefix + e.tierzero, e.map}))
        return false;
    return true;
  };
  if (!walk(t.head, "", "")) return;
  for (int i = 0; i < model.n_layer; ++i)
    if (!walk(t.block, fmt::format(fmt::runtime(t.layer_prefix), i), fmt::format("h.{}.", i))) return;
  walk(t.tail, "", "");
}

std::uint64_t hf_tensor_count(const GptConfig& model) {
  const FamilyTable& t = table_of(model.family);
  return count_present(t.head, model) +
         static_cast<std::uint64_t>(model.n_layer) * count_present(t.block, model) +
         count_present(t.tail, model);
}

bool is_hf_buffer_name(ModelFamily family, std::string_view name) {
  switch (family) {
    case ModelFamily::gpt2:
      return name.starts_with("h.") && (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
    case ModelFamily::llama:
      return name.starts_with("model.layers.") && name.ends_with(".self_attn.rotary_emb.inv_freq");
    case ModelFamily::gpt_neox:
      return name.starts_with("gpt_neox.layers.") &&
             (name.ends_with(".attention.bias") || name.ends_with(".attention.masked_bias") ||
              name.ends_with(".attention.rotary_emb.inv_freq"));
  }
  return false;
}

std::string_view hf_head_name(ModelFamily family) {
  return family == ModelFamily::gpt_neox ? "embed_out.weight" : "lm_head.weight";
}

std::string_view hf_embedding_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama:
      return "model.embed_tokens.weight";
    case ModelFamily::gpt_neox:
      return "gpt_neox.embed_in.weight";
    case ModelFamily::gpt2:
      break;
  }
  return "wte.weight";
}

std::string_view hf_architecture_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama:
      return "LlamaForCausalLM";
    case ModelFamily::gpt_neox:
      return "GPTNeoXForCausalLM";
    case ModelFamily::gpt2:
      break;
  }
  return "GPT2LMHeadModel";
}

std::string_view hf_family_label(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama:
      return "Llama";
    case ModelFamily::gpt_neox:
      return "GPT-NeoX";
    case ModelFamily::gpt2:
      break;
  }
  return "GPT-2";
}

}  // namespace tz
