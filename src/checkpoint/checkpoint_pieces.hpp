// Who writes what: the pieces of a checkpoint, a pure function of the shard layout.
//
// Rank r holds, for every range, the O shard [o, o + valid) of the range's real elements (the
// master weights and both moments). The shard is held by R = world / |D(O)| replicas (R = 1 when O
// is sharded over the world; R = world for a replicated O); replica j (r's mixed-radix index over the
// replica tiers (tO, T-1]) writes the j-th of R near-equal slices of it, so each element is written
// exactly once and every rank writes about 1/world of the state, whatever the plan. A slice is cut
// at tensor boundaries into pieces. A rank's file holds its pieces back to back: all master pieces in
// range order, then all adam_m, then all adam_v.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/sharded_engine.hpp"
#include "model/parameter_layout.hpp"
#include "plan/shard_layout.hpp"

namespace tz {

struct PlannedPiece {
  int tensor = 0;  // index into ParameterLayout::tensors()
  OptimValue which = OptimValue::master;
  int range = 0;
  std::uint64_t range_offset = 0;  // first element, in the range's real elements
  std::uint64_t begin = 0;         // first element, in the tensor
  std::uint64_t numel = 0;
  std::uint64_t byte_offset = 0;  // in the rank's file
  std::uint64_t first_block = 0;  // index of the piece's first checksum in the rank's list
};

struct RankPieces {
  int rank = 0;
  std::vector<PlannedPiece> pieces;
  std::uint64_t bytes = 0;   // the file's size
  std::uint64_t blocks = 0;  // checksums, all pieces
};

// The slice of this rank's O shard of `range` it writes: [begin, end) in the range's real elements.
struct WriteSlice {
  std::uint64_t begin = 0, end = 0;
};
WriteSlice write_slice(const ShardLayout& layout, int range, int rank);

RankPieces pieces_written_by(const ShardLayout& layout, const ParameterLayout& params, int rank,
                             std::uint64_t block_bytes);

}  // namespace tz
