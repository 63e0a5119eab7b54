// Fuzzes the model-file readers of `sample --weights` and `train --init-from` (checkpoint/
// model_file_reader.hpp through train/exported_weights.hpp): a safetensors file with Hugging Face's
// GPT-2 names read against a given shape, or an llm.c model file whose header gives the shape. The
// first input byte picks the format (bit 0: llm.c) and, for safetensors, the shape it is read
// against (bit 1: a model of 100000 layers, which a small file must refuse at once, never build);
// the rest is the file. A file that reads holds the model's parameters, every one finite.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "fuzz_check.hpp"
#include "model/parameter_layout.hpp"
#include "train/exported_weights.hpp"

namespace {

// The seeds' model (tests/fuzz/model_file/): small enough that a whole file fits -max_len.
const tz::GptConfig kModel{.n_layer = 1, .n_embd = 4, .n_head = 1, .n_positions = 4, .vocab_size = 5};

std::string scratch_path(std::string_view ending) {
  return (std::filesystem::temp_directory_path() / fmt::format("tz-fuzz-model-{}{}", ::getpid(), ending))
      .string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool llmc = data[0] & 1;
  tz::GptConfig shape = kModel;
  if (data[0] & 2) shape.n_layer = 100000;
  const std::string path = scratch_path(llmc ? ".bin" : ".safetensors");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    if (!out) tz::fuzz::finding(fmt::format("cannot write the scratch file {}", path));
  }
  tz::ModelWeights w;
  const bool read = tz::fuzz::reads_or_input_error(
      [&] { w = llmc ? tz::read_llmc_model(path) : tz::read_safetensors_gpt2(path, shape); });
  std::filesystem::remove(path);
  if (!read) return 0;
  tz::fuzz::expect(w.params.size() == tz::ParameterLayout(w.config).total_numel(),
                   "a file that read does not hold its model's parameters");
  for (float v : w.params) tz::fuzz::expect(std::isfinite(v), "a file that read holds a non-finite weight");
  return 0;
}
