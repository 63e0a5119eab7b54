#include "checkpoint/llmc_format.hpp"

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

bool is_llmc_checkpoint(const InFile& file) {
  if (file.size() < 4) return false;
  std::int32_t magic = 0;
  file.read_at(0, &magic, 4);
  return magic == kLlmcModelMagic;
}

LlmcHeader read_llmc_header(const InFile& file) {
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
  return h;
}

}  // namespace tz
