// Export: a checkpoint's master weights as one model file the ecosystem loads, on one process, no MPI
// (checkpoint/model_file_layout.hpp lists the tensors of each format):
//   safetensors  Hugging Face's names and layouts for the model's family (GPT2LMHeadModel with its
//                Conv1D matrices transposed, LlamaForCausalLM, GPTNeoXForCausalLM), F32 or BF16;
//   llmc         llm.c's gpt2_124M.bin layout (GPT-2 only; version 3 fp32 or 5 bf16, vocabulary
//                padded to 128).
// Steps: resolve and open the checkpoint (every block checked), then for each file tensor in file
// order read the master weights of the tierzero tensor it comes from (once for the several file
// tensors or per-head row groups one tensor makes), transpose what the format stores (in, out), round
// to bf16 when asked (nearest even), write; element counts are checked against the file's shapes.
// A regular OUT is written as a temporary beside it, fsynced and renamed, so OUT is never half a
// model, and a failed export leaves nothing behind; a device or FIFO (/dev/null, a pipe) is written
// in place, never replaced (core/output_file.hpp). Memory: two copies of the largest tensor. Tied weights
// (the LM head is the embedding) are written once.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "model/weights_file.hpp"

namespace tz {

enum class WeightFormat { safetensors, llmc };
// "safetensors" | "llmc"; InputError naming `option`.
WeightFormat parse_weight_format(const std::string& name, const std::string& option);
// "fp32" | "bf16"; InputError naming `option`.
DType parse_export_dtype(const std::string& name, const std::string& option);

struct ExportOptions {
  WeightFormat format = WeightFormat::safetensors;
  DType dtype = DType::f32;  // f32 or bf16
};

struct ExportResult {
  std::string checkpoint;  // the step directory read
  int step = 0;
  int tensors = 0;          // in the file
  std::uint64_t bytes = 0;  // the file's size
};

// `checkpoint`: a step directory or a save directory (its latest).
ExportResult export_checkpoint(const std::string& checkpoint, const std::string& out,
                               const ExportOptions& options);

// The master weights of a checkpoint (a step directory or a save directory: its latest) as one flat
// fp32 buffer in ParameterLayout order, on one process, every block checked: what `tierzero sample`
// reads a checkpoint with. Memory: the model's parameters once.
ModelWeights read_checkpoint_weights_flat(const std::string& checkpoint);

}  // namespace tz
