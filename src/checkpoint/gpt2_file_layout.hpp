// The tensors of the two model files tierzero exports and imports, in file order, and which tierzero
// parameter tensors each is made of.
//
// safetensors with Hugging Face's GPT-2 names (GPT2Model's state dict, as openai-community/gpt2's
// model.safetensors names them, no "transformer." prefix): wte.weight (V, C), wpe.weight (P, C),
// h.{i}.ln_1.{weight,bias}, h.{i}.attn.c_attn.{weight (C, 3C), bias}, h.{i}.attn.c_proj.{weight
// (C, C), bias}, h.{i}.ln_2.*, h.{i}.mlp.c_fc.{weight (C, 4C), bias}, h.{i}.mlp.c_proj.{weight
// (4C, C), bias}, ln_f.{weight,bias}. GPT-2's Conv1D stores a linear layer as (in, out): y = x W + b,
// the transpose of tierzero's (out, in), so the four matrices per block are transposed; qkv's rows
// are q, k, v in both. The LM head is tied to wte and written once (as wte.weight).
//
// llm.c's checkpoint (train_gpt2.py's write_model, the gpt2_124M.bin layout): a header of 256 int32
// (magic 20240326, version 3 = fp32 or 5 = bf16, maxT, V, L, NH, C, Vp = V padded to a multiple of 128)
// then 16 tensors, each layer-stacked: wte (Vp, C) (rows past V zero), wpe (maxT, C), ln1w (L, C),
// ln1b (L, C), qkvw (L, 3C, C), qkvb (L, 3C), attprojw (L, C, C), attprojb (L, C), ln2w, ln2b,
// fcw (L, 4C, C), fcb (L, 4C), fcprojw (L, C, 4C), fcprojb (L, C), lnfw (C), lnfb (C). Matrices are
// (out, in), as tierzero's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz {

struct FileTensor {
  struct Part {
    int tensor = 0;            // index into ParameterLayout::tensors()
    bool transposed = false;   // the file holds it (in, out)
    std::uint64_t offset = 0;  // first element of the part in the file tensor
  };
  std::string name;                  // in the file
  std::vector<std::uint64_t> shape;  // in the file
  std::vector<Part> parts;           // concatenated in order; elements past them are zero (llm.c's Vp)
  std::uint64_t numel() const;
};

std::vector<FileTensor> hf_gpt2_tensors(const ParameterLayout& params);

// The names of Hugging Face's GPT-2 file of `n_layer` layers in file order, without a layout (so a
// reader can look for them before it builds one): visit returns false to stop.
struct HfGpt2Name {
  std::string file, tierzero;
  bool transposed = false;  // the file holds it (in, out)
};
void for_each_hf_gpt2_name(int n_layer, const std::function<bool(const HfGpt2Name&)>& visit);
std::vector<FileTensor> llmc_tensors(const ParameterLayout& params);
int llmc_padded_vocab(int vocab_size);  // V rounded up to a multiple of 128

}  // namespace tz
