// Reading a checkpoint, every byte checked. Opening reads the completion marker and the manifest and
// checks the manifest's size and CRC-32C against the marker. read() fetches any run of a tensor's
// state: it finds the pieces that hold it, reads the whole checksum blocks that cover the run
// (directly into the destination when a block lies inside it, else through one block-sized buffer),
// and compares each block's CRC-32C with the manifest. Memory: one block (1 MiB) besides the
// destination. Errors (InputError) name the file, the tensor and state, the elements and bytes, and
// the expected and found values: a truncated file, a file of another size than the manifest says,
// a wrong checksum.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/checkpoint_manifest.hpp"
#include "engine/sharded_engine.hpp"

namespace tz {

class CheckpointReader {
 public:
  // `dir` is a complete checkpoint directory (resolve_checkpoint).
  explicit CheckpointReader(std::string dir);

  const std::string& dir() const { return dir_; }
  const CheckpointManifest& manifest() const { return manifest_; }

  // Fills out[0, n) with elements [begin, begin + n) of state `which` of tensor `t` (of manifest()).
  void read(const CheckpointTensor& t, OptimValue which, std::uint64_t begin, std::uint64_t n, float* out);

  // A StateReader for ShardedEngine::restore over the tensors of `params` (checked with
  // CheckpointManifest::check_against first). The reader must outlive it.
  StateReader state_reader(const ParameterLayout& params);

  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  InFile& file(const std::string& name, const CheckpointTensor& t, OptimValue which);

  std::string dir_;
  CheckpointManifest manifest_;
  std::map<std::string, std::unique_ptr<InFile>> files_;
  std::vector<float> block_;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace tz
