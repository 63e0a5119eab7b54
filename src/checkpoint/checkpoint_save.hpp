// Saving a checkpoint: every rank writes its own file, collectively and atomically (docs/checkpoint.md).
//
// Steps (each an agreed I/O phase, checkpoint/agreed_io.hpp: every rank runs its part, all learn the
// outcome together, with the checkpoint I/O timeout):
//   1. prepare (rank 0): create DIR, remove a stale DIR/step_N.tmp, create it;
//   2. write (every rank): its pieces (checkpoint/checkpoint_pieces.hpp) straight from its O shard
//      into DIR/step_N.tmp/rank_R.bin, a CRC-32C per 1 MiB block, every value checked finite (a
//      diverged state is never saved: TrainingError on every rank, the previous checkpoints untouched);
//      fsync;
//   3. the checksums all-gathered (4 bytes per block);
//   4. commit (rank 0): manifest.json written and fsynced, the directory fsynced, any old DIR/step_N
//      unmarked and removed, step_N.tmp renamed to step_N, DIR fsynced, the COMPLETE marker written
//      atomically, then `latest`, then rotation (keep the newest K).
// A crash before the marker leaves no complete checkpoint of step N, and everything before intact.
// Memory: no copy of the state (writes go from the shards themselves); bytes written: the state once.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "data/data_cursor.hpp"
#include "engine/sharded_engine.hpp"
#include "optim/lr_schedule.hpp"

namespace tz {

// What a checkpoint records besides the engine's state (the training layer knows it).
struct CheckpointMeta {
  nlohmann::json train_config = nlohmann::json::object();
  nlohmann::json topology = nlohmann::json::object();
  nlohmann::json plan = nlohmann::json::object();
  DataCursor data;  // the loader's cursor after the step
  LrSchedule schedule;
  std::uint64_t init_seed = 0;
};

struct SaveOptions {
  std::string dir;             // the save directory (shared by all ranks)
  int keep = 0;                // complete checkpoints kept, the new one included; 0: all
  double io_timeout_s = 1800;  // per phase; longer than any collective's timeout
  // Fault injection for tests: rank `kill_rank` sends itself SIGKILL at `kill_point`: "write" (half
  // of its file written), "manifest" (rank 0, manifest durable, before the rename), "rename" (rank 0,
  // after the rename, before the marker), "marker" (rank 0, after the marker, before `latest`), in
  // the save of step `kill_step` (-1: any).
  std::string kill_point;
  int kill_rank = 0;
  int kill_step = -1;
};

struct SaveResult {
  std::string path;  // DIR/step_N
  int step = 0;
  std::uint64_t bytes = 0;       // all ranks' files
  std::uint64_t rank_bytes = 0;  // this rank's file
  double seconds = 0;
  std::vector<std::string> removed;  // by rotation (rank 0)
};

// Collective over `world` (the engine's world, every rank). InputError on an I/O failure (naming the
// file and the rank), TrainingError on a non-finite state, CommError on the I/O timeout; the same on
// every rank.
SaveResult save_checkpoint(Communicator& world, const ShardedEngine& engine, const CheckpointMeta& meta,
                           const SaveOptions& options);

// "write", "manifest", "rename", "marker"; InputError naming `option` for anything else.
void check_kill_point(const std::string& point, const std::string& option);

}  // namespace tz
