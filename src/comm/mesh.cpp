// Hierarchical collectives over a set of tiers S = {t1 < ... < tk}, composed of single-tier ones
// (mesh.hpp, docs/algorithms.md). Regions are counted in shards of `count` elements; shard_index puts
// the innermost tier's coordinate most significant, so at every step the blocks a tier group
// exchanges are contiguous:
//   all-gather, step over tier t (from tk down to t1): the ranks of the tier-t group hold the same
//     region of span s (the product of the fan-outs of the tiers already done) and gather f_t of
//     them side by side, in place in `recv`: region start = start - c_t * s, span f_t * s.
//   reduce-scatter, step over tier t (from t1 up to tk): the current region of span s is cut into
//     f_t blocks of s / f_t shards; block c_t is kept, summed over the tier-t group.
//   all-reduce: the part of the count that divides the group size G goes reduce-scatter then
//     all-gather as above; the remainder (count mod G < G elements) is all-reduced flat on group(S).
// Steps are chained with stream_wait, so each starts when the previous one is done, and all are
// issued now, in the caller's order, on every rank. Intermediate shards of reduce-scatter live in
// pooled buffers attached to the returned Work.
#include "comm/mesh.hpp"

#include <cstring>

#include "core/error.hpp"
#include "device/work_state.hpp"

namespace tz {

Mesh::Mesh(Topology topology, std::unique_ptr<Communicator> world)
    : topology_(std::move(topology)),
      world_(std::move(world)),
      device_(backend(world_ ? world_->options().device : DeviceKind::cpu)),
      scratch_(device_) {
  TZ_CHECK(world_ != nullptr);
  if (!topology_.resolved() || topology_.world_size() != world_->size())
    fail_input("topology {}: describes {} ranks but the world has {}", topology_.name(),
               topology_.resolved() ? topology_.world_size() : -1, world_->size());
}

Communicator& Mesh::group(TierSet tiers) {
  const TierSet all = tiers_up_to(topology_.num_tiers() - 1);
  TZ_CHECK((tiers & ~all) == 0, "tier set {:#x} on a {}-tier topology", tiers, topology_.num_tiers());
  if (tiers == all) return *world_;
  auto it = groups_.find(tiers);
  if (it != groups_.end()) return *it->second;
  const int r = world_->rank();
  auto comm = world_->split(topology_.group_color(r, tiers), topology_.group_rank(r, tiers),
                            topology_.tier_set_name(tiers));
  return *groups_.emplace(tiers, std::move(comm)).first->second;
}

Communicator& Mesh::flat_group(TierSet tiers) {
  if (active_tiers(topology_, tiers).size() <= 1) return group(tiers);
  auto it = flat_groups_.find(tiers);
  if (it != flat_groups_.end()) return *it->second;
  const int r = world_->rank();
  auto comm =
      world_->split(topology_.group_color(r, tiers), shard_index(tiers), topology_.tier_set_name(tiers));
  return *flat_groups_.emplace(tiers, std::move(comm)).first->second;
}

void Mesh::prepare(const CollectivePlan& plan, TierSet tiers) {
  if (plan.route == CollectiveRoute::flat) {
    flat_group(tiers);
    return;
  }
  for (const TierStep& s : plan.steps) {
    if (s.tiers == tier_bit(s.tier))
      tier(s.tier);
    else
      group(s.tiers);  // a hierarchical all-reduce's tail
  }
}

int Mesh::shard_index(TierSet tiers) const {
  const std::vector<int> c = topology_.coords(world_->rank());
  int index = 0;
  for (int t = 0; t < topology_.num_tiers(); ++t)
    if (tiers & tier_bit(t)) index = index * topology_.tier(t).fanout + c[t];
  return index;
}

Work Mesh::all_gather(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                      CollectiveAlgo algo) {
  return run(
      {.kind = CollectiveKind::all_gather, .tiers = tiers, .count = count, .dtype = dtype, .algo = algo},
      send, recv);
}

Work Mesh::reduce_scatter(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                          CollectiveAlgo algo) {
  return run(
      {.kind = CollectiveKind::reduce_scatter, .tiers = tiers, .count = count, .dtype = dtype, .algo = algo},
      send, recv);
}

Work Mesh::all_reduce(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype,
                      CollectiveAlgo algo) {
  return run(
      {.kind = CollectiveKind::all_reduce, .tiers = tiers, .count = count, .dtype = dtype, .algo = algo},
      send, recv);
}

Work Mesh::run(const CollectiveRequest& request, const void* send, void* recv) {
  TZ_CHECK_EQ(request.quant_bits, 0);  // quantized requests run through quant/run_collective.hpp
  return execute(plan_collective(topology_, with_shared_memory(request)), request.kind, request.tiers, send,
                 recv);
}

SharedMemoryTiers Mesh::shared_memory_tiers() const {
  if (!world_ || !world_->can_share_memory()) return {};
  const CommOptions& o = world_->options();
  // Every rank on this host (threads of one process, or an MPI job on one machine): any group may
  // share memory; otherwise the groups within the host tier, which start-up checked against the
  // hosts the ranks run on (Topology::check_hosts).
  TierSet tiers = 0;
  if (o.ranks_on_host >= world_->size())
    tiers = tiers_up_to(topology_.num_tiers() - 1);
  else if (topology_.host_tier() >= 0)
    tiers = tiers_up_to(topology_.host_tier());
  return {.all_gather = o.shared_memory_all_gather ? tiers : 0,
          .reduce_scatter = o.shared_memory_reduce_scatter ? tiers : 0,
          .all_to_all = o.shared_memory_all_to_all ? tiers : 0};
}

CollectiveRequest Mesh::with_shared_memory(CollectiveRequest request) const {
  request.shared_memory = shared_memory_tiers();
  return request;
}

Work Mesh::execute(const CollectivePlan& plan, CollectiveKind kind, TierSet tiers, const void* send,
                   void* recv) {
  const std::size_t count = plan.wire_count;
  const DType dtype = plan.wire_dtype;
  switch (plan.route) {
    case CollectiveRoute::local:
      if (send != recv) copy_bytes(device_, recv, send, count * dtype_bytes(dtype));
      return Work();
    case CollectiveRoute::flat: {
      Communicator& g = flat_group(tiers);
      TZ_CHECK_EQ(plan.steps.size(), 1u);
      switch (kind) {
        case CollectiveKind::all_gather:
          return g.all_gather(send, recv, count, dtype, plan.steps[0].algorithm);
        case CollectiveKind::reduce_scatter:
          return g.reduce_scatter(send, recv, count, dtype, plan.steps[0].algorithm);
        case CollectiveKind::all_reduce:
          return g.all_reduce(send, recv, count, dtype);
        default:
          break;
      }
      break;
    }
    case CollectiveRoute::hierarchical:
      switch (kind) {
        case CollectiveKind::all_gather:
          return all_gather_steps(Work(), plan.steps, tiers, send, recv, count, dtype);
        case CollectiveKind::reduce_scatter:
          return reduce_scatter_steps(Work(), plan.steps, tiers, send, recv, count, dtype);
        case CollectiveKind::all_reduce:
          return all_reduce_steps(plan.steps, tiers, send, recv, count, dtype);
        default:
          break;
      }
      break;
    case CollectiveRoute::per_tier: {
      TZ_CHECK(kind == CollectiveKind::all_reduce, "per-tier {}", collective_name(kind));
      Work prev;
      const void* src = send;
      for (const TierStep& s : plan.steps) {
        Communicator& g = tier(s.tier);
        g.stream_wait(prev);
        prev = g.all_reduce(src, recv, count, dtype);
        src = recv;
      }
      if (plan.steps.empty() && send != recv) copy_bytes(device_, recv, send, count * dtype_bytes(dtype));
      return prev;
    }
    case CollectiveRoute::qgz_all_to_all:
      break;
  }
  TZ_CHECK(false, "the mesh has no {} route for a {}", collective_route_name(plan.route),
           collective_name(kind));
  __builtin_unreachable();
}

// Steps outermost tier first (plan order): the ranks of the tier-t group hold the same region of
// span s (the fan-outs of the tiers already done) and gather f_t of them side by side, in place.
Work Mesh::all_gather_steps(Work prev, std::span<const TierStep> steps, TierSet tiers, const void* send,
                            void* recv, std::size_t count, DType dtype) {
  const std::vector<int> c = topology_.coords(world_->rank());
  const std::size_t shard_bytes = count * dtype_bytes(dtype);
  auto* out = static_cast<std::byte*>(recv);
  std::size_t start = shard_index(tiers), span = 1;
  const void* src = send;
  for (const TierStep& s : steps) {
    TZ_CHECK(s.kind == CollectiveKind::all_gather && s.tiers == tier_bit(s.tier), "all-gather step {}",
             s.label);
    Communicator& g = tier(s.tier);
    const std::size_t region = start - c[s.tier] * span;
    g.stream_wait(prev);
    prev = g.all_gather(src, out + region * shard_bytes, span * count, dtype, s.algorithm);
    start = region;
    span *= topology_.tier(s.tier).fanout;
    src = out + start * shard_bytes;
  }
  return prev;
}

// Steps innermost tier first (plan order): the current region of span s is cut into f_t blocks of
// s / f_t shards; block c_t is kept, summed over the tier-t group.
Work Mesh::reduce_scatter_steps(Work prev, std::span<const TierStep> steps, TierSet tiers, const void* send,
                                void* recv, std::size_t count, DType dtype) {
  const std::size_t shard_bytes = count * dtype_bytes(dtype);
  std::size_t span = group_size(tiers);
  ScratchBuffer bufs[2];
  const void* src = send;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const TierStep& s = steps[i];
    TZ_CHECK(s.kind == CollectiveKind::reduce_scatter && s.tiers == tier_bit(s.tier),
             "reduce-scatter step {}", s.label);
    const bool last = i + 1 == steps.size();
    span /= topology_.tier(s.tier).fanout;
    void* dst = recv;
    if (!last) {
      bufs[i % 2] = scratch(span * shard_bytes);
      dst = bufs[i % 2]->data().address();
    }
    Communicator& g = tier(s.tier);
    g.stream_wait(prev);
    prev = g.reduce_scatter(src, dst, span * count, dtype, s.algorithm);
    src = dst;
  }
  for (auto& b : bufs)
    if (b) attach_to_work(prev, b);
  return prev;
}

// The plan's steps: the tail all-reduce on group(S) when count % |S| != 0, the reduce-scatter steps
// of the part that divides, then the all-gather steps (which start on the outermost tier, where the
// reduce-scatter ended: same stream, in order).
Work Mesh::all_reduce_steps(std::span<const TierStep> steps, TierSet tiers, const void* send, void* recv,
                            std::size_t count, DType dtype) {
  const std::size_t g = group_size(tiers);
  const std::size_t main = count / g * g, rest = count - main;
  const std::size_t esz = dtype_bytes(dtype);
  Work prev;
  std::size_t i = 0;
  if (rest > 0) {
    TZ_CHECK(!steps.empty() && steps[0].kind == CollectiveKind::all_reduce, "all-reduce tail step");
    prev = group(tiers).all_reduce(static_cast<const std::byte*>(send) + main * esz,
                                   static_cast<std::byte*>(recv) + main * esz, rest, dtype);
    i = 1;
  }
  if (main == 0) return prev;
  std::size_t split = i;
  while (split < steps.size() && steps[split].kind == CollectiveKind::reduce_scatter) ++split;
  auto shard = scratch(main / g * esz);
  std::byte* mid = shard->data().address();
  prev = reduce_scatter_steps(prev, steps.subspan(i, split - i), tiers, send, mid, main / g, dtype);
  Work ag = all_gather_steps(Work(), steps.subspan(split), tiers, mid, recv, main / g, dtype);
  attach_to_work(ag, shard);
  return ag;
}

}  // namespace tz
