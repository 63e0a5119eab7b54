// llm.c's model checkpoint header (gpt2_124M.bin and the files train_gpt2.py writes): 256 int32,
// little-endian: [0] magic 20240326, [1] version (3: fp32 parameters, 5: bf16), [2] maxT, [3] V,
// [4] L, [5] NH, [6] C, [7] Vp (the padded vocabulary), the rest zero. The parameters follow
// (checkpoint/model_file_layout.hpp lists them).
#pragma once

#include <array>
#include <cstdint>

#include "checkpoint/checked_file.hpp"
#include "core/dtype.hpp"
#include "model/gpt_config.hpp"

namespace tz {

inline constexpr std::int32_t kLlmcModelMagic = 20240326;
inline constexpr std::uint64_t kLlmcModelHeaderBytes = 256 * 4;

struct LlmcHeader {
  DType dtype = DType::f32;
  GptConfig model;
  int padded_vocab = 0;
};

std::array<std::int32_t, 256> llmc_header_words(const LlmcHeader& h);
// InputError naming the file, the word and the expected and found values: another magic, a version
// other than 3 or 5, sizes that are not positive, Vp < V, a model other than `expected_model` (when
// given: the word that differs), a file size other than the header's (checked from the words alone,
// before any table of tensors is built).
LlmcHeader read_llmc_header(const InFile& file, const GptConfig* expected_model = nullptr);
// Parameters the file holds: the model's, with wte's Vp rows (saturated at 2^64 - 1).
std::uint64_t llmc_parameter_count(const LlmcHeader& h);
// Whether the file starts with llm.c's model magic.
bool is_llmc_checkpoint(const InFile& file);

}  // namespace tz
