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

#include "comm/work_state.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

std::vector<int> tiers_of(TierSet tiers, int num_tiers) {
  std::vector<int> out;
  for (int t = 0; t < num_tiers; ++t)
    if (tiers & tier_bit(t)) out.push_back(t);
  return out;
}

}  // namespace

Mesh::Mesh(Topology topology, std::unique_ptr<Communicator> world)
    : topology_(std::move(topology)), world_(std::move(world)) {
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
  int active = 0;
  for (int t : tiers_of(tiers, topology_.num_tiers())) active += topology_.tier(t).fanout > 1 ? 1 : 0;
  if (active <= 1) return group(tiers);
  auto it = flat_groups_.find(tiers);
  if (it != flat_groups_.end()) return *it->second;
  const int r = world_->rank();
  auto comm =
      world_->split(topology_.group_color(r, tiers), shard_index(tiers), topology_.tier_set_name(tiers));
  return *flat_groups_.emplace(tiers, std::move(comm)).first->second;
}

int Mesh::shard_index(TierSet tiers) const {
  const std::vector<int> c = topology_.coords(world_->rank());
  int index = 0;
  for (int t : tiers_of(tiers, topology_.num_tiers())) index = index * topology_.tier(t).fanout + c[t];
  return index;
}

Work Mesh::all_gather(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype) {
  return all_gather_after(Work(), tiers, send, recv, count, dtype);
}

Work Mesh::reduce_scatter(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype) {
  return reduce_scatter_after(Work(), tiers, send, recv, count, dtype);
}

Work Mesh::all_gather_after(Work prev, TierSet tiers, const void* send, void* recv, std::size_t count,
                            DType dtype) {
  const std::vector<int> ts = tiers_of(tiers, topology_.num_tiers());
  const std::vector<int> c = topology_.coords(world_->rank());
  const std::size_t shard_bytes = count * dtype_bytes(dtype);
  auto* out = static_cast<std::byte*>(recv);
  if (ts.empty()) {
    if (shard_bytes > 0 && send != recv) std::memcpy(recv, send, shard_bytes);
    return Work();
  }
  std::size_t start = shard_index(tiers), span = 1;
  const void* src = send;
  for (auto it = ts.rbegin(); it != ts.rend(); ++it) {
    Communicator& g = tier(*it);
    const std::size_t region = start - c[*it] * span;
    g.stream_wait(prev);
    prev = g.all_gather(src, out + region * shard_bytes, span * count, dtype);
    start = region;
    span *= topology_.tier(*it).fanout;
    src = out + start * shard_bytes;
  }
  return prev;
}

std::shared_ptr<std::vector<std::byte>> Mesh::scratch(std::size_t bytes) {
  for (auto& buf : scratch_)
    if (buf.use_count() == 1) {
      if (buf->size() < bytes) buf->resize(bytes);
      return buf;
    }
  scratch_.push_back(std::make_shared<std::vector<std::byte>>(bytes));
  return scratch_.back();
}

Work Mesh::reduce_scatter_after(Work prev, TierSet tiers, const void* send, void* recv, std::size_t count,
                                DType dtype) {
  const std::vector<int> ts = tiers_of(tiers, topology_.num_tiers());
  const std::size_t shard_bytes = count * dtype_bytes(dtype);
  if (ts.empty()) {
    if (shard_bytes > 0 && send != recv) std::memcpy(recv, send, shard_bytes);
    return Work();
  }
  std::size_t span = group_size(tiers);
  std::shared_ptr<std::vector<std::byte>> bufs[2];
  const void* src = send;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const bool last = i + 1 == ts.size();
    span /= topology_.tier(ts[i]).fanout;
    void* dst = recv;
    if (!last) {
      bufs[i % 2] = scratch(span * shard_bytes);
      dst = bufs[i % 2]->data();
    }
    Communicator& g = tier(ts[i]);
    g.stream_wait(prev);
    prev = g.reduce_scatter(src, dst, span * count, dtype);
    src = dst;
  }
  for (auto& b : bufs)
    if (b) attach_to_work(prev, b);
  return prev;
}

Work Mesh::all_reduce(TierSet tiers, const void* send, void* recv, std::size_t count, DType dtype) {
  const std::size_t g = group_size(tiers);
  const std::size_t main = count / g * g, rest = count - main;
  const std::size_t esz = dtype_bytes(dtype);
  Work prev;
  if (rest > 0)  // the tail that does not divide the group: flat, first, and tiny (< g elements)
    prev = group(tiers).all_reduce(static_cast<const std::byte*>(send) + main * esz,
                                   static_cast<std::byte*>(recv) + main * esz, rest, dtype);
  if (main == 0) return prev;
  auto shard = scratch(main / g * esz);
  prev = reduce_scatter_after(prev, tiers, send, shard->data(), main / g, dtype);
  // The all-gather starts on the outermost tier, where the reduce-scatter ended: same stream, in order.
  Work ag = all_gather_after(Work(), tiers, shard->data(), recv, main / g, dtype);
  attach_to_work(ag, shard);
  return ag;
}

}  // namespace tz
