// The manifest of a checkpoint (manifest.json; docs/checkpoint.md shows one): everything a resume
// needs besides the tensor bytes, and where every byte of every tensor is.
//
// Terms. A tensor is a model parameter tensor by its tierzero name ("wte", "h.0.attn.qkv.weight"),
// unpadded, with its global shape; each of its three fp32 states (master weights, AdamW m and v) is
// cut into pieces, each a contiguous run of the tensor's row-major elements [begin, begin + numel)
// written by exactly one rank into its file at byte_offset. A piece carries one CRC-32C per block of
// block_bytes (the last block may be shorter), so a reader that needs part of a piece reads and
// checks whole blocks only. The pieces of a state tile the tensor exactly (checked on load).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/data_cursor.hpp"
#include "engine/sharded_engine.hpp"
#include "model/gpt_config.hpp"
#include "model/parameter_layout.hpp"
#include "optim/lr_schedule.hpp"

namespace tz {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr std::uint64_t kCheckpointBlockBytes = std::uint64_t{1} << 20;

constexpr int kOptimValues = 3;
std::string_view optim_value_name(OptimValue v);  // "master", "adam_m", "adam_v"

struct CheckpointPiece {
  std::string file;               // inside the checkpoint directory
  std::uint64_t byte_offset = 0;  // of element `begin` in the file
  std::uint64_t begin = 0;        // first element (row-major index into the tensor)
  std::uint64_t numel = 0;
  std::vector<std::uint32_t> block_crc32c;  // one per block_bytes of the piece
};

struct CheckpointTensor {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::array<std::vector<CheckpointPiece>, kOptimValues> pieces;  // by OptimValue, sorted by begin
  std::uint64_t numel() const;
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  int step = 0;           // optimizer steps done (the next step to run)
  int skipped_steps = 0;  // of those, skipped for non-finite values
  GptConfig model;
  nlohmann::json train_config = nlohmann::json::object();  // as the run that wrote it read it
  nlohmann::json topology = nlohmann::json::object();
  nlohmann::json plan = nlohmann::json::object();
  int world_size = 1;
  DataCursor data;  // the global data position after `step` steps (one copy: it is the same on every rank)
  LrSchedule schedule;
  std::uint64_t init_seed = 0;  // the initialisation seed (every other random choice is a pure function of
                                // the data seed and position, which the cursor holds)
  std::uint64_t block_bytes = kCheckpointBlockBytes;
  std::map<std::string, std::uint64_t> files;  // file -> its size in bytes
  std::vector<CheckpointTensor> tensors;

  nlohmann::json to_json() const;
  // Structure and types only; InputError naming `where` and the key. check_against() checks content.
  static CheckpointManifest from_json(const nlohmann::json& j, const std::string& where);

  // Every check a load needs before reading a byte, against the model being trained: format version,
  // model shape (naming each key that differs), every tensor present with its shape and no unknown
  // one, the pieces of every state tiling their tensor exactly (a gap is an error: optimizer state is
  // never silently zero), checksum counts, and every piece inside its file's declared size.
  // InputError naming `where`, the tensor and the expected and found values.
  void check_against(const ParameterLayout& layout, const std::string& where) const;
  const CheckpointTensor& tensor(const std::string& name) const;  // after check_against
};

}  // namespace tz
