// The tensors of the model files tierzero exports and imports, in file order, and which elements of
// which tierzero parameter tensors each is made of.
//
// safetensors with Hugging Face's names and layouts for the model's family (GPT-2, Llama, GPT-NeoX:
// the tables of checkpoint/hf_tensor_names.hpp). A file tensor is a tierzero tensor, or a run of its
// rows (Llama's q/k/v_proj of attn.qkv, gate/up_proj of mlp.fc), or its rows regrouped (GPT-NeoX's
// per-head query_key_value), or its transpose (GPT-2's Conv1D (in, out) matrices). Every tierzero
// tensor must land in the file exactly once: a model whose architecture the family's file cannot
// hold (a bias Hugging Face's class lacks, grouped-query attention in GPT-NeoX, ...) is an InputError
// naming the tensor. A tied LM head is written once (as the embedding).
//
// llm.c's checkpoint (GPT-2 only; train_gpt2.py's write_model, the gpt2_124M.bin layout): a header of
// 256 int32 (magic 20240326, version 3 = fp32 or 5 = bf16, maxT, V, L, NH, C, Vp = V padded to a
// multiple of 128) then 16 tensors, each layer-stacked: wte (Vp, C) (rows past V zero), wpe (maxT, C),
// ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C), qkvb (L, 3C), attprojw (L, C, C), attprojb (L, C), ln2w,
// ln2b, fcw (L, 4C, C), fcb (L, 4C), fcprojw (L, C, 4C), fcprojb (L, C), lnfw (C), lnfb (C). Matrices
// are (out, in), as tierzero's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz {

struct FileTensor {
  // Elements [begin, begin + numel) of a tierzero tensor, at element `offset` of the file tensor.
  struct Part {
    int tensor = 0;            // index into ParameterLayout::tensors()
    bool transposed = false;   // the file holds the whole tensor (in, out)
    std::uint64_t offset = 0;  // first element of the part in the file tensor
    std::uint64_t begin = 0;   // first element in the tierzero tensor (row-major, (out, in))
    std::uint64_t numel = 0;
  };
  std::string name;                  // in the file
  std::vector<std::uint64_t> shape;  // in the file
  std::vector<Part> parts;           // by offset; elements past them are zero (llm.c's Vp)
  std::uint64_t numel() const;
};

// The safetensors file of `params`' model with Hugging Face's names for its family. InputError
// naming `where` and the tierzero tensor when the family's file cannot hold the model.
std::vector<FileTensor> hf_tensors(const ParameterLayout& params, const std::string& where);

std::vector<FileTensor> llmc_tensors(const ParameterLayout& params);  // GPT-2 architectures only
int llmc_padded_vocab(int vocab_size);                                // V rounded up to a multiple of 128

}  // namespace tz
