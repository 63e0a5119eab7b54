// Memory per rank for the model states of a plan, from the shard layout (bytes; equal on all ranks
// since all shards have the same padded length):
//   W_fwd shard      padded/|D_Wfwd| elements in the compute dtype (bf16, or fp32 in fp32 mode)
//   W_bwd secondary  padded/|D_Wbwd| compute-dtype elements when W_bwd is coarser than W_fwd (hpZ),
//                    else 0 (backward gathers from the W_fwd shard)
//   G shard          padded/|D_G| fp32 elements (accumulation over micro-batches)
//   O shard          padded/|D_O| x 12 bytes: fp32 master weights + AdamW m and v
// Working buffers (alive during forward/backward):
//   gather buffers   (1 + prefetch_depth) x the largest padded range in the compute dtype, plus for
//                    qwZ the gathered INT8 codes and scales of that range; 0 when W_fwd is replicated
//                    (compute reads the W shard itself)
//   gradient buffer  the largest padded range's gradient in the compute dtype before it is reduced;
//                    0 when G is replicated (gradients accumulate straight into the G buffer)
//   boundary buffers the O-shard gradient (fp32) when G is on an inner tier than O (else the G shard
//                    is that gradient), plus the updated O shard in the compute dtype that the W
//                    shards are gathered (or sliced) from
// Working-buffer figures are the planner's model of an engine; the engine's own buffers may differ
// (e.g. an fp32 compute copy); the STATE figures are the contract the engine allocates exactly.
// Activations are the cost model's: an input here. peak = states + working + activations.
#pragma once

#include <cstddef>
#include <string>

#include "plan/shard_layout.hpp"

namespace tz {

struct MemoryPlan {
  std::size_t w_fwd_bytes = 0;
  std::size_t w_bwd_bytes = 0;
  std::size_t grad_bytes = 0;
  std::size_t optim_bytes = 0;
  std::size_t gather_buffer_bytes = 0;
  std::size_t grad_buffer_bytes = 0;
  std::size_t boundary_buffer_bytes = 0;
  std::size_t activation_bytes = 0;

  std::size_t state_bytes() const { return w_fwd_bytes + w_bwd_bytes + grad_bytes + optim_bytes; }
  std::size_t working_bytes() const {
    return gather_buffer_bytes + grad_buffer_bytes + boundary_buffer_bytes;
  }
  std::size_t peak_bytes() const { return state_bytes() + working_bytes() + activation_bytes; }
  // One line per item, in GiB and bytes.
  std::string describe() const;
};

MemoryPlan plan_memory(const ShardLayout& layout, std::size_t activation_bytes = 0);

// InputError naming the plan, the peak and every state size when peak_bytes() > capacity_bytes.
void check_fits(const MemoryPlan& memory, double capacity_bytes, std::string_view plan_name);
// Capacity from the topology's device (memory_gib x 2^30); no check when the topology gives none.
void check_fits_device(const MemoryPlan& memory, const Topology& topo, std::string_view plan_name);

}  // namespace tz
