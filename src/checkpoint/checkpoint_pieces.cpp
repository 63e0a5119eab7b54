#include "checkpoint/checkpoint_pieces.hpp"

#include <algorithm>

namespace tz {

WriteSlice write_slice(const ShardLayout& layout, int range, int rank) {
  const ShardSpan o = layout.shard(ModelState::optim, range, rank);
  const TierSet replicas = layout.replica_tiers();
  const std::uint64_t R = static_cast<std::uint64_t>(layout.topology().group_size(replicas));
  const std::uint64_t j = static_cast<std::uint64_t>(shard_index(layout.topology(), rank, replicas));
  const std::uint64_t v = o.valid_numel;
  return {o.offset + v * j / R, o.offset + v * (j + 1) / R};
}

RankPieces pieces_written_by(const ShardLayout& layout, const ParameterLayout& params, int rank,
                             std::uint64_t block_bytes) {
  RankPieces out;
  out.rank = rank;
  const auto& tensors = params.tensors();
  for (OptimValue which : {OptimValue::master, OptimValue::adam_m, OptimValue::adam_v}) {
    for (int r = 0; r < params.num_ranges(); ++r) {
      const WriteSlice s = write_slice(layout, r, rank);
      if (s.begin >= s.end) continue;
      for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
        const ParamTensor& pt = tensors[t];
        if (pt.range != r) continue;
        const std::uint64_t a = std::max<std::uint64_t>(s.begin, pt.range_offset);
        const std::uint64_t b = std::min<std::uint64_t>(s.end, pt.range_offset + pt.numel);
        if (a >= b) continue;
        PlannedPiece p{t, which, r, a, a - pt.range_offset, b - a, out.bytes, out.blocks};
        out.bytes += p.numel * sizeof(float);
        out.blocks += (p.numel * sizeof(float) + block_bytes - 1) / block_bytes;
        out.pieces.push_back(p);
      }
    }
  }
  return out;
}

}  // namespace tz
