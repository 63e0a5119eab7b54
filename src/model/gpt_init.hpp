// GPT-2's initialisation, for every family: linear weights, embeddings and an untied LM head ~ N(0, 0.02);
// the two residual projections of each block (attn.proj, mlp.proj: Llama's o_proj and down_proj)
// ~ N(0, 0.02 / sqrt(2 L)); biases 0; norm gains (LayerNorm or RMSNorm) 1. Values come
// from a counter-based generator (core/counter_rng.hpp) indexed by the element's offset in the flat buffer,
// so a seed gives the same model on any machine and any slice can be initialised alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/parameter_layout.hpp"

namespace tz {

// Fills params[0, total_numel).
void gpt2_init(float* params, const ParameterLayout& layout, std::uint64_t seed);
// Fills out[0, n) with the values of flat-buffer elements [offset, offset + n).
void gpt2_init_slice(float* out, const ParameterLayout& layout, std::uint64_t seed, std::size_t offset,
                     std::size_t n);

}  // namespace tz
