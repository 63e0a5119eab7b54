// Reading the model files tierzero exports (checkpoint/model_file_layout.hpp): a safetensors file with
// Hugging Face's names for the model's family (GPT-2's with or without the "transformer." prefix,
// Llama's, GPT-NeoX's) or an llm.c checkpoint (GPT-2, version 3 or 5), told apart by llm.c's magic,
// checked against a model's ParameterLayout before anything is read: names, shapes, dtypes, element
// counts and llm.c's header words (an InputError names the file, the tensor and the expected and
// found values). Then any span of any tierzero tensor can be read, in tierzero's (out, in) layout:
// each tensor is a list of segments (a run of its elements at a place in the file: one for most
// tensors, one per q/k/v or gate/up slice, one per head and q/k/v for GPT-NeoX's query_key_value), and
// a span reads the segments it overlaps with positioned reads; a matrix the file stores transposed
// (GPT-2's Conv1D, (in, out)) is read one file row at a time over the columns the span covers (the
// span plus at most two partial rows), so memory is bounded by the span. bf16 is widened exactly.
// Ignored entries: the buffers Hugging Face files carry (GPT-2's attention masks h.{i}.attn.bias and
// .masked_bias; Llama's and GPT-NeoX's rotary_emb.inv_freq; GPT-NeoX's attention.bias and
// .masked_bias); a tied model's LM head (lm_head.weight, GPT-NeoX's embed_out.weight) must equal the
// embedding (checked on the elements read). Every value read must be finite: a NaN or infinity is an
// InputError naming the file, the tensor and the element. `--init-from` reads each rank's shard spans
// through it, `sample` whole tensors on one process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checked_file.hpp"
#include "core/bf16.hpp"
#include "core/dtype.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

// Before a layout of `model` is built: when the safetensors file at `path` holds fewer entries than
// the model's family file has tensors, an InputError naming the first tensor it lacks. The walk
// stops there, so a config of 100000 layers beside a small file costs as many lookups as the file
// has entries, not a table of the model's millions of tensors.
void check_safetensors_holds_model(const std::string& path, const GptConfig& model);

class ModelFileReader {
 public:
  ModelFileReader(const std::string& path, const ParameterLayout& params);

  // Elements [begin, begin + n) of tensor t (an index into params.tensors()) in tierzero's layout.
  void read(int t, std::uint64_t begin, std::uint64_t n, float* out);
  // Every tensor, into one flat buffer in ParameterLayout order.
  std::vector<float> read_all();

  const std::string& format() const { return format_; }  // "safetensors" | "llmc"
  const std::string& dtype() const { return dtype_; }    // "fp32" | "bf16" | "mixed"
  std::uint64_t bytes_read() const { return bytes_read_; }

  // Where a run of one tierzero tensor's elements lies in the file.
  struct Segment {
    std::uint64_t begin = 0, numel = 0;  // elements of the tierzero tensor
    std::uint64_t byte_offset = 0;       // of element `begin`
    DType dtype = DType::f32;
    std::string file_name;  // the tensor in the file holding it, for messages
  };
  // Where one tierzero tensor's values lie in the file.
  struct TensorSource {
    std::vector<Segment> segments;     // by begin, tiling the tensor
    bool transposed = false;           // one segment, the file holding it (in, out)
    std::uint64_t rows = 0, cols = 0;  // tierzero's (out, in) shape
    std::uint64_t head_offset = 0;     // a tied model's LM head bytes in the file, for wte (0: none)
    std::string head_name;             // its name in the file
  };

 private:
  void read_values(std::uint64_t byte_offset, DType dtype, std::uint64_t begin, std::uint64_t n, float* out);
  void read_unchecked(int t, std::uint64_t begin, std::uint64_t n, float* out);
  void check_finite(int t, std::uint64_t begin, std::uint64_t n, const float* values) const;

  const ParameterLayout& params_;
  InFile file_;
  std::string format_, dtype_;
  std::vector<TensorSource> sources_;
  std::vector<float> tile_, check_;  // a transposed span's columns; the LM head's elements
  std::vector<bf16> bf16_buf_;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace tz
