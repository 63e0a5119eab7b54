#include "comm/transport/sim_transport.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.hpp"

namespace tz {

struct SimWorld::RankState {
  mutable std::mutex mu;
  double clock_s = 0;
  std::vector<double> egress_free_s;  // per tier
};

SimWorld::SimWorld(Topology topology, SimOptions options)
    : topology_(std::move(topology)), options_(options) {
  TZ_CHECK(topology_.resolved(), "simulated world needs a resolved topology");
  for (int r = 0; r < topology_.world_size(); ++r) {
    ranks_.push_back(std::make_unique<RankState>());
    ranks_.back()->egress_free_s.assign(topology_.num_tiers(), 0.0);
  }
}

SimWorld::~SimWorld() = default;

double SimWorld::now_s(int world_rank) const {
  const RankState& r = *ranks_.at(world_rank);
  std::lock_guard lock(r.mu);
  return r.clock_s;
}

void SimWorld::advance_s(int world_rank, double seconds) {
  RankState& r = *ranks_.at(world_rank);
  std::lock_guard lock(r.mu);
  r.clock_s += seconds;
}

void SimWorld::advance_to_s(int world_rank, double t) {
  RankState& r = *ranks_.at(world_rank);
  std::lock_guard lock(r.mu);
  r.clock_s = std::max(r.clock_s, t);
}

double SimWorld::max_now_s() const {
  double m = 0;
  for (int r = 0; r < world_size(); ++r) m = std::max(m, now_s(r));
  return m;
}

int SimWorld::link_tier(int world_a, int world_b) const {
  const auto ca = topology_.coords(world_a), cb = topology_.coords(world_b);
  for (int t = topology_.num_tiers() - 1; t >= 0; --t)
    if (ca[t] != cb[t]) return t;
  return 0;
}

double SimWorld::reserve_egress(int world_rank, int tier, double post_s, double bytes) {
  RankState& r = *ranks_.at(world_rank);
  std::lock_guard lock(r.mu);
  const double start = std::max(post_s, r.egress_free_s[tier]);
  r.egress_free_s[tier] = start + bytes / (topology_.tier(tier).bandwidth_GBps * 1e9);
  return start;
}

namespace {

// Group rank -> world rank map exchange on split (reserved tag, costs no simulated time).
constexpr int kMembershipTag = Transport::kMaxTag;

class SimTransport final : public Transport {
 public:
  SimTransport(std::shared_ptr<SimWorld> world, std::unique_ptr<Transport> inner,
               std::vector<int> world_ranks)
      : world_(std::move(world)), inner_(std::move(inner)), world_ranks_(std::move(world_ranks)) {
    TZ_CHECK_EQ(static_cast<int>(world_ranks_.size()), inner_->size());
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int world_rank(int peer) const override { return world_ranks_.at(peer); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    const int me = world_ranks_[rank()], to = world_ranks_.at(peer);
    Pending p;
    p.is_send = true;
    const double now = world_->now_s(me);
    if (tag >= kFirstReservedTag) {
      p.header = now;
      p.done_s = now;
    } else {
      const int tier = world_->link_tier(me, to);
      const Tier& link = world_->topology().tier(tier);
      const double wire_s = double(bytes) / (link.bandwidth_GBps * 1e9);
      const double start = world_->reserve_egress(me, tier, now, double(bytes));
      p.done_s = start + wire_s;
      p.header = start + link.latency_us * 1e-6 + wire_s;  // arrival at the receiver
    }
    auto slot = std::make_unique<Pending>(p);
    slot->inner[0] = inner_->isend(&slot->header, sizeof(double), peer, tag);
    slot->inner[1] = inner_->isend(data, bytes, peer, tag);
    return remember(std::move(slot), peer, true);
  }

  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    auto slot = std::make_unique<Pending>();
    slot->inner[0] = inner_->irecv(&slot->header, sizeof(double), peer, tag);
    slot->inner[1] = inner_->irecv(data, bytes, peer, tag);
    return remember(std::move(slot), peer, false);
  }

  bool wait_all(std::span<Request> requests, Deadline deadline) override {
    std::vector<Request> inner;
    std::vector<Pending*> owners;
    for (const Request& r : requests) {
      if (!r.pending()) continue;
      Pending* p = pending_.at(r.id).get();
      for (Request& q : p->inner) {
        if (q.pending()) inner.push_back(q);
      }
      owners.push_back(p);
    }
    const bool all = inner_->wait_all(inner, deadline);
    // Write back the inner requests' states, in the order they were collected.
    std::size_t k = 0;
    for (Pending* p : owners)
      for (Request& q : p->inner)
        if (q.pending()) q = inner[k++];
    const int me = world_ranks_[rank()];
    for (Request& r : requests) {
      if (!r.pending()) continue;
      auto it = pending_.find(r.id);
      Pending& p = *it->second;
      if (p.inner[0].pending() || p.inner[1].pending()) continue;
      world_->advance_to_s(me, p.is_send ? p.done_s : p.header);
      pending_.erase(it);
      r = Request{};
    }
    return all;
  }

  void cancel(std::span<Request> requests) override {
    for (Request& r : requests) {
      if (!r.pending()) continue;
      auto it = pending_.find(r.id);
      if (it == pending_.end()) continue;
      inner_->cancel(it->second->inner);
      pending_.erase(it);
      r = Request{};
    }
  }

  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    std::unique_ptr<Transport> sub = inner_->split(color, key, deadline);
    // Learn the world rank of every member of the new group (not simulated: bookkeeping).
    const int n = sub->size(), me = world_ranks_[rank()];
    std::vector<int> world_ranks(n, -1);
    world_ranks[sub->rank()] = me;
    std::vector<Request> reqs;
    for (int peer = 0; peer < n; ++peer) {
      if (peer == sub->rank()) continue;
      reqs.push_back(sub->isend(&world_ranks[sub->rank()], sizeof(int), peer, kMembershipTag));
      reqs.push_back(sub->irecv(&world_ranks[peer], sizeof(int), peer, kMembershipTag));
    }
    if (!sub->wait_all(reqs, deadline)) {
      sub->cancel(reqs);
      throw CommError(fmt::format("simulated transport: split (color {}) timed out exchanging ranks", color));
    }
    return std::make_unique<SimTransport>(world_, std::move(sub), std::move(world_ranks));
  }

  double now_s() const override { return world_->now_s(world_ranks_[rank()]); }

  void on_local_reduce(std::size_t bytes) override {
    if (world_->options().reduce_GBps > 0)
      world_->advance_s(world_ranks_[rank()], double(bytes) / (world_->options().reduce_GBps * 1e9));
  }

 private:
  struct Pending {
    bool is_send = false;
    double header = 0;  // send: the arrival time it carries; receive: the arrival time received
    double done_s = 0;  // send: when the sender's port is free again
    Request inner[2];
  };

  Request remember(std::unique_ptr<Pending> slot, int peer, bool is_send) {
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, std::move(slot));
    return Request{.id = id, .peer = peer, .is_send = is_send};
  }

  std::shared_ptr<SimWorld> world_;
  std::unique_ptr<Transport> inner_;
  std::vector<int> world_ranks_;
  std::map<std::uint64_t, std::unique_ptr<Pending>> pending_;
  std::uint64_t next_id_ = 1;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> make_sim_transports(std::shared_ptr<SimWorld> world,
                                                            std::vector<std::unique_ptr<Transport>> inner) {
  TZ_CHECK_EQ(static_cast<int>(inner.size()), world->world_size());
  std::vector<int> identity(inner.size());
  for (std::size_t r = 0; r < identity.size(); ++r) identity[r] = static_cast<int>(r);
  std::vector<std::unique_ptr<Transport>> out;
  for (auto& t : inner) out.push_back(std::make_unique<SimTransport>(world, std::move(t), identity));
  return out;
}

}  // namespace tz
