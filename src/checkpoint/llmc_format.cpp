#include "checkpoint/llmc_format.hpp"

#include <fmt/format.h>

#include <cstring>

#include "core/error.hpp"

namespace tz {

std::array<std::int32_t, 256> llmc_header_words(const LlmcHeader& h) {
  std::array<std::int32_t, 256> w{};
  w[0] = kLlmcModelMagic;
  w[1] = h.dtype == DType::bf16 ? 5 : 3;
  w[2] = h.model.n_positions;
  w[3] = h.model.vocab_size;
  w[4] = h.model.n_layer;
  w[5] = h.model.n_head;
  w[6] = h.model.n_embd;
  w[7] = h.padded_vocab;
  return w;
}

std::uint64_t llmc_parameter_count(const LlmcHeader& h) {
  GptConfig padded = h.model;  // wte holds Vp rows
  padded.vocab_size = h.padded_vocab;
  return padded.parameter_count();
}

bool is_llmc_checkpoint(const InFile& file) {
  if (file.size() < 4) return false;
  std::int32_t magic = 0;
  file.read_at(0, &magic, 4);
  return magic == kLlmcModelMagic;
}

LlmcHeader read_llmc_header(const InFile& file, const GptConfig* expected_model) {
  if (file.size() < kLlmcModelHeaderBytes)
    fail_input("llm.c checkpoint {}: {} bytes, shorter than the 1024-byte header", file.path(), file.size());
  std::array<std::int32_t, 256> w{};
  file.read_at(0, w.data(), kLlmcModelHeaderBytes);
  if (w[0] != kLlmcModelMagic)
    fail_input("llm.c checkpoint {}: magic at byte 0: expected {}, found {}", file.path(), kLlmcModelMagic,
               w[0]);
  LlmcHeader h;
  if (w[1] == 3)
    h.dtype = DType::f32;
  else if (w[1] == 5)
    h.dtype = DType::bf16;
  else
    fail_input("llm.c checkpoint {}: version at byte 4: expected 3 (fp32) or 5 (bf16), found {}", file.path(),
               w[1]);
  h.model = {.n_layer = w[4], .n_embd = w[6], .n_head = w[5], .n_positions = w[2], .vocab_size = w[3]};
  h.padded_vocab = w[7];
  h.model.validate("llm.c checkpoint " + file.path());
  if (h.padded_vocab < h.model.vocab_size)
    fail_input("llm.c checkpoint {}: padded vocabulary (word 7) {} is smaller than the vocabulary {}",
               file.path(), h.padded_vocab, h.model.vocab_size);
  if (expected_model) {
    const GptConfig& want = *expected_model;
    const std::pair<const char*, std::pair<int, int>> words[] = {
        {"maxT (word 2)", {want.n_positions, h.model.n_positions}},
        {"V (word 3)", {want.vocab_size, h.model.vocab_size}},
        {"L (word 4)", {want.n_layer, h.model.n_layer}},
        {"NH (word 5)", {want.n_head, h.model.n_head}},
        {"C (word 6)", {want.n_embd, h.model.n_embd}}};
    for (const auto& [key, v] : words)
      if (v.first != v.second)
        fail_input("llm.c checkpoint {}: {}: expected {} (this run's model), found {}", file.path(), key,
                   v.first, v.second);
  }
  // The size the words announce, checked before anything is built from them (a header of 100000
  // layers on a small file is refused here, at once).
  const std::uint64_t params = llmc_parameter_count(h);
  const unsigned __int128 expected =
      kLlmcModelHeaderBytes + static_cast<unsigned __int128>(params) * dtype_bytes(h.dtype);
  if (expected != file.size())
    fail_input(
        "llm.c checkpoint {}: expected {} bytes (header + {} parameters of {}), found {}; the header says L "
        "{}, C "
        "{}, maxT {}, Vp {}",
        file.path(),
        params == UINT64_MAX ? std::string("over 2^64")
                             : fmt::format("{}", static_cast<std::uint64_t>(expected)),
        params, dtype_name(h.dtype), file.size(), h.model.n_layer, h.model.n_embd, h.model.n_positions,
        h.padded_vocab);
  return h;
}

}  // namespace tz
