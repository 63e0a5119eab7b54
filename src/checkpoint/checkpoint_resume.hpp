// Resuming from a checkpoint on any world size, plan or topology (docs/checkpoint.md).
//
// Steps (agreed I/O phases, checkpoint/agreed_io.hpp):
//   1. every rank resolves the path (a step directory, or a save directory's latest complete one) and
//      reads its completion marker; the world all-gathers (step, manifest checksum) and every rank
//      stops if any rank found another checkpoint (a save directory that is not shared);
//   2. every rank opens the manifest, checks it against its model (CheckpointManifest::check_against)
//      and restores its engine: its O shard (master, m, v) and its weight shards read piece by piece,
//      each 1 MiB block's CRC-32C checked (checkpoint/checkpoint_reader.hpp), then the step and
//      skipped-step counters.
// A rank reads its own shards only (W shards coarser than its O shard included): about 1/|D(O)| of the
// state, plus at most one block per piece boundary. The data cursor is returned for the loader to
// restore (one global position, so it continues the same stream at any world size).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "data/data_cursor.hpp"
#include "engine/sharded_engine.hpp"

namespace tz {

struct ResumeOptions {
  double io_timeout_s = 1800;
};

struct ResumeResult {
  std::string path;  // the step directory read
  std::string note;  // why it is not the save directory's `latest` (resolve_checkpoint), or empty
  int step = 0;
  int skipped_steps = 0;
  int world_size = 0;  // of the run that wrote it
  DataCursor data;
  nlohmann::json train_config, topology, plan;  // of the run that wrote it
  std::uint64_t bytes_read = 0;                 // by this rank
  double seconds = 0;
};

// Collective over `world`. InputError naming the file, tensor and values on any bad checkpoint, the
// same on every rank.
ResumeResult resume_checkpoint(Communicator& world, ShardedEngine& engine, const std::string& path,
                               const ResumeOptions& options = {});

}  // namespace tz
