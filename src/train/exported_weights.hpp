// Exported GPT-2 weight files, read on one process into the plain form `tierzero sample` takes
// (model/weights_file.hpp's ModelWeights: a config and one flat fp32 buffer in ParameterLayout order).
//
// safetensors (Hugging Face's format): an 8-byte little-endian header size N, N bytes of JSON
//   {"<name>": {"dtype": "F32" | "BF16", "shape": [...], "data_offsets": [begin, end]}, ...,
//   "__metadata__": {...}}, then the tensor bytes (offsets from the end of the header, row-major,
//   little-endian). GPT-2's names, GPT2Model's state dict with or without the "transformer." prefix:
//     wte.weight (V, C), wpe.weight (P, C), ln_f.{weight,bias} (C), and per block h.<i>.:
//     ln_1.{weight,bias}, attn.c_attn.weight (C, 3C) + bias (3C), attn.c_proj.weight (C, C) + bias,
//     ln_2.{weight,bias}, mlp.c_fc.weight (C, 4C) + bias (4C), mlp.c_proj.weight (4C, C) + bias (C).
//   GPT-2's Conv1D stores a linear layer as (in, out), y = x W + b: the transpose of tierzero's (out,
//   in), so these four matrices are transposed on read (q, k, v are in the same order in both).
//   Ignored: the causal-mask buffers older files carry (h.<i>.attn.bias, h.<i>.attn.masked_bias).
//   lm_head.weight, when present, must equal wte.weight element for element (tierzero's head is tied).
//   The file does not hold n_head, so the model's shape comes from the caller.
//
// llm.c's model file (gpt2_124M.bin, as llm.c's train_gpt2.py writes it): 256 int32 header words,
//   [0] magic 20240326, [1] version (3: fp32, 5: bf16), [2] maxT, [3] V, [4] L, [5] NH, [6] C, [7] Vp
//   (V padded, usually to a multiple of 128), then 16 tensors, each stacked over the layers: wte (Vp,
//   C; rows past V are padding), wpe (maxT, C), ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C), qkvb (L,
//   3C), attprojw (L, C, C), attprojb (L, C), ln2w (L, C), ln2b (L, C), fcw (L, 4C, C), fcb (L, 4C),
//   fcprojw (L, C, 4C), fcprojb (L, C), lnfw (C), lnfb (C). Matrices are (out, in), as tierzero's.
//
// Both are read by checkpoint/model_file_reader.hpp, the reader `--init-from` uses: every field is
// checked before it is used (names, dtypes, shapes, offsets inside the file, header words and the
// file's size), and a mismatch is an InputError naming the file, the tensor or header word, and the
// expected and found values. Memory: the model once, plus one matrix tile while it is transposed.
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/llmc_format.hpp"
#include "model/weights_file.hpp"

namespace tz {

// A safetensors file holding the GPT-2 of shape `model`.
ModelWeights read_safetensors_gpt2(const std::string& path, const GptConfig& model);
// An llm.c model file; the shape comes from its header.
ModelWeights read_llmc_model(const std::string& path);
// Whether the file starts with llm.c's model magic (false when it cannot be read).
bool has_llmc_model_magic(const std::string& path);

}  // namespace tz
