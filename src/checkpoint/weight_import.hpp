// Import: initialise a run from exported weights (fine-tuning): a safetensors file with Hugging Face's
// names for the model's family (GPT-2, "transformer." prefix or not; Llama; GPT-NeoX) or an llm.c
// checkpoint (GPT-2, version 3 or 5), told apart by llm.c's magic. Every rank checks the file against
// its model (names, shapes, dtypes, element counts, llm.c's header words: an error names the file, the
// tensor and the expected and found values) and reads only what its shards need: positioned reads of
// its spans, split where a tierzero tensor comes from several file tensors (Llama's q/k/v_proj) or
// row groups (GPT-NeoX's per-head query_key_value); for a matrix the file stores transposed (GPT-2's
// Conv1D, (in, out)), one read per file row of the columns its span covers (the span plus at most two
// partial rows). Memory: that tile, bounded by the span. The master weights and weight shards come from
// the file (bf16 widened exactly), AdamW m and v start at zero, the step at 0. Ignored entries: the
// buffers Hugging Face files carry (attention masks, rotary frequencies) and a tied model's LM head,
// which must equal the embedding (checked on the elements each rank reads)
// (checkpoint/model_file_reader.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "engine/sharded_engine.hpp"

namespace tz {

struct ImportOptions {
  double io_timeout_s = 1800;
};

struct ImportResult {
  std::string format;            // "safetensors" | "llmc"
  std::string dtype;             // "fp32" | "bf16"
  std::uint64_t bytes_read = 0;  // by this rank
  double seconds = 0;
};

// Collective over `world`; the same InputError on every rank on a bad file.
ImportResult import_weights(Communicator& world, ShardedEngine& engine, const std::string& path,
                            const ImportOptions& options = {});

}  // namespace tz
