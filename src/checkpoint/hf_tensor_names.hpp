// Hugging Face's tensor names for each model family, as data: one table per family of (file name,
// tierzero tensor, row map, when present), from which checkpoint/model_file_layout.hpp builds the
// file's tensors and the reader their sources. Matrices are (out, in) in every family but GPT-2, whose
// Conv1D stores (in, out).
//
//   gpt2      GPT2Model's names (wte.weight, h.{i}.attn.c_attn.weight, ...; the "transformer." prefix
//             of GPT2LMHeadModel accepted on import); the LM head is tied to wte.
//   llama     LlamaForCausalLM: model.embed_tokens.weight, model.layers.{i}.{input_layernorm,
//             self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm,
//             lm_head.weight when untied. q/k/v_proj are row slices of tierzero's attn.qkv ([q | k | v]:
//             H D, KV D, KV D rows), gate/up_proj of mlp.fc ([gate | up]: F rows each).
//   gpt_neox  GPTNeoXForCausalLM: gpt_neox.embed_in.weight, gpt_neox.layers.{i}.{input_layernorm,
//             attention.query_key_value, attention.dense, post_attention_layernorm, mlp.dense_h_to_4h,
//             mlp.dense_4h_to_h}, gpt_neox.final_layer_norm, embed_out.weight when untied.
//             query_key_value's rows are grouped per head: file row (h 3 + j) D + d is tierzero's
//             attn.qkv row j C + h D + d (j = 0 query, 1 key, 2 value).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "model/gpt_config.hpp"

namespace tz {

// Which rows of the tierzero tensor a file tensor holds, and how.
enum class RowMap : std::uint8_t {
  same,              // all of them, in order
  transposed,        // all of them, stored (in, out) (GPT-2's Conv1D)
  query_rows,        // attn.qkv rows [0, H D)
  key_rows,          // attn.qkv rows [H D, (H + KV) D)
  value_rows,        // attn.qkv rows [(H + KV) D, (H + 2 KV) D)
  gate_rows,         // mlp.fc rows [0, F) (SwiGLU)
  up_rows,           // mlp.fc rows [F, 2 F)
  heads_interleaved  // attn.qkv, grouped per head as [q_h | k_h | v_h] (GPT-NeoX)
};

struct HfTensorName {
  std::string file;      // the name in the file
  std::string tierzero;  // the tierzero tensor it comes from
  RowMap map = RowMap::same;
};

// The file tensors of `model`'s family in file order (those its architecture has: a bias only when
// the model has it, an untied head only when untied); visit returns false to stop. Needs no layout,
// so a reader can walk a 100000-layer config's names as far as a small file's entries go.
void for_each_hf_tensor_name(const GptConfig& model, const std::function<bool(const HfTensorName&)>& visit);
// How many for_each_hf_tensor_name visits, computed without walking them.
std::uint64_t hf_tensor_count(const GptConfig& model);

// Entries a Hugging Face file of the family may carry that are not parameters (attention masks,
// rotary frequency buffers): ignored on import.
bool is_hf_buffer_name(ModelFamily family, std::string_view name);
// The name of the LM head's matrix in the family's files ("lm_head.weight", "embed_out.weight"), and
// of the embedding it equals when tied.
std::string_view hf_head_name(ModelFamily family);
std::string_view hf_embedding_name(ModelFamily family);
// "GPT2LMHeadModel", "LlamaForCausalLM", "GPTNeoXForCausalLM", and "GPT-2", "Llama", "GPT-NeoX": for
// messages.
std::string_view hf_architecture_name(ModelFamily family);
std::string_view hf_family_label(ModelFamily family);

}  // namespace tz
