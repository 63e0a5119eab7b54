// Ranks-as-threads transport (thread_transport.hpp). One mutex and one condition variable per world:
// simple, and plenty for unit tests (the copies themselves run outside the lock, in parallel).
#include "comm/transport/thread_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "comm/thread_world.hpp"
#include "core/error.hpp"

namespace tz {

// Not in an anonymous namespace: ThreadWorld (declared in the header) holds them, and gcc rejects a
// class with members of internal-linkage types when the build compiles several files as one unit.
struct ThreadOp {
  enum class Phase { queued, copying, done };
  void* data = nullptr;  // receive buffer or (const) send buffer
  std::size_t bytes = 0;
  bool is_send = false;
  Phase phase = Phase::queued;
  std::string error;
};

struct ThreadMatchKey {
  int ctx, src, dst, tag;
  auto operator<=>(const ThreadMatchKey&) const = default;
};

class ThreadWorld {
 public:
  explicit ThreadWorld(int n) : size_(n) {}
  int size() const { return size_; }

  Request post(const ThreadMatchKey& key, void* data, std::size_t bytes, bool is_send, int peer) {
    std::unique_lock lock(mu_);
    // Once aborted nothing is matched any more, so an operation still queued is never copied into or
    // out of: a rank may post and then unwind (its buffers freed) without waiting.
    if (aborted_) throw CommError("thread world aborted: " + abort_reason_);
    const std::uint64_t id = next_id_++;
    auto op = std::make_shared<ThreadOp>();
    op->data = data;
    op->bytes = bytes;
    op->is_send = is_send;
    ops_[id] = op;
    auto& others = is_send ? recvs_ : sends_;
    auto it = others.find(key);
    if (it == others.end()) {
      (is_send ? sends_ : recvs_)[key].push_back({id, op});
      return Request{id, peer, is_send};
    }
    std::shared_ptr<ThreadOp> other = it->second.front().second;
    it->second.pop_front();
    if (it->second.empty()) others.erase(it);
    ThreadOp& send = is_send ? *op : *other;
    ThreadOp& recv = is_send ? *other : *op;
    if (send.bytes != recv.bytes) {
      const std::string e = fmt::format(
          "message size mismatch: world rank {} sent {} bytes, world rank {} expected {} (tag {})", key.src,
          send.bytes, key.dst, recv.bytes, key.tag);
      send.error = recv.error = e;
      send.phase = recv.phase = ThreadOp::Phase::done;
      cv_.notify_all();
      return Request{id, peer, is_send};
    }
    send.phase = recv.phase = ThreadOp::Phase::copying;
    lock.unlock();
    if (send.bytes > 0) std::memcpy(recv.data, send.data, send.bytes);
    lock.lock();
    send.phase = recv.phase = ThreadOp::Phase::done;
    lock.unlock();
    cv_.notify_all();
    return Request{id, peer, is_send};
  }

  bool wait_all(std::span<Request> reqs, Deadline deadline) {
    std::unique_lock lock(mu_);
    for (;;) {
      if (aborted_) {
        cancel_locked(reqs, lock);
        throw CommError("thread world aborted: " + abort_reason_);
      }
      bool all = true;
      for (Request& r : reqs) {
        if (!r.pending()) continue;
        auto it = ops_.find(r.id);
        TZ_CHECK(it != ops_.end(), "unknown request {}", r.id);
        if (it->second->phase != ThreadOp::Phase::done) {
          all = false;
          continue;
        }
        std::string error = it->second->error;
        ops_.erase(it);
        r = Request{};
        if (!error.empty()) {
          cancel_locked(reqs, lock);
          throw CommError(error);
        }
      }
      if (all) return true;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && Clock::now() >= deadline) {
        // One last look: requests that completed right at the deadline count as done.
        for (Request& r : reqs)
          if (r.pending() && ops_.at(r.id)->phase == ThreadOp::Phase::done && ops_.at(r.id)->error.empty()) {
            ops_.erase(r.id);
            r = Request{};
          }
        return std::none_of(reqs.begin(), reqs.end(), [](const Request& r) { return r.pending(); });
      }
    }
  }

  void cancel(std::span<Request> reqs) {
    std::unique_lock lock(mu_);
    cancel_locked(reqs, lock);
  }

  // With the lock held: a copy in progress finishes first, a queued operation leaves its queue, so no
  // peer writes into (or reads from) the buffer afterwards. A wait that throws cancels its unfinished
  // requests this way first: the caller's buffers die as the exception unwinds.
  void cancel_locked(std::span<Request> reqs, std::unique_lock<std::mutex>& lock) {
    for (Request& r : reqs) {
      if (!r.pending()) continue;
      auto it = ops_.find(r.id);
      if (it == ops_.end()) continue;
      std::shared_ptr<ThreadOp> op = it->second;
      cv_.wait(lock, [&] { return op->phase != ThreadOp::Phase::copying; });
      if (op->phase == ThreadOp::Phase::queued) remove_queued(r.id, op->is_send ? sends_ : recvs_);
      ops_.erase(r.id);
      r = Request{};
    }
  }

  int context_for(int parent_ctx, std::uint64_t split_seq, int color) {
    std::lock_guard lock(mu_);
    auto [it, inserted] = contexts_.try_emplace(std::tuple(parent_ctx, split_seq, color), next_ctx_);
    if (inserted) ++next_ctx_;
    return it->second;
  }

  void throw_if_aborted() {
    std::lock_guard lock(mu_);
    if (aborted_) throw CommError("thread world aborted: " + abort_reason_);
  }

  void abort(const std::string& reason) {
    {
      std::lock_guard lock(mu_);
      if (aborted_) return;
      aborted_ = true;
      abort_reason_ = reason;
    }
    cv_.notify_all();
  }

 private:
  using Queue = std::deque<std::pair<std::uint64_t, std::shared_ptr<ThreadOp>>>;

  static void remove_queued(std::uint64_t id, std::map<ThreadMatchKey, Queue>& queues) {
    for (auto it = queues.begin(); it != queues.end(); ++it) {
      auto pos =
          std::find_if(it->second.begin(), it->second.end(), [&](const auto& e) { return e.first == id; });
      if (pos == it->second.end()) continue;
      it->second.erase(pos);
      if (it->second.empty()) queues.erase(it);
      return;
    }
  }

  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<ThreadMatchKey, Queue> sends_, recvs_;
  std::unordered_map<std::uint64_t, std::shared_ptr<ThreadOp>> ops_;
  std::uint64_t next_id_ = 1;
  std::map<std::tuple<int, std::uint64_t, int>, int> contexts_;
  int next_ctx_ = 1;
  bool aborted_ = false;
  std::string abort_reason_;
};

namespace {

class ThreadTransport final : public Transport {
 public:
  ThreadTransport(std::shared_ptr<ThreadWorld> world, int ctx, std::vector<int> members, int rank)
      : world_(std::move(world)), ctx_(ctx), members_(std::move(members)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int world_rank(int peer) const override { return members_.at(peer); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    check_peer(peer, tag);
    return world_->post(ThreadMatchKey{ctx_, members_[rank_], members_[peer], tag}, const_cast<void*>(data),
                        bytes, true, peer);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    check_peer(peer, tag);
    return world_->post(ThreadMatchKey{ctx_, members_[peer], members_[rank_], tag}, data, bytes, false, peer);
  }
  bool wait_all(std::span<Request> requests, Deadline deadline) override {
    return world_->wait_all(requests, deadline);
  }
  void cancel(std::span<Request> requests) override { world_->cancel(requests); }
  bool can_share_memory() const override { return true; }
  void check_aborted() override { world_->throw_if_aborted(); }

  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    const int p = size();
    const std::vector<std::array<int, 2>> all = exchange_split_keys(*this, color, key, deadline);
    std::vector<int> order;
    for (int i = 0; i < p; ++i)
      if (all[i][0] == color) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return all[a][1] < all[b][1]; });
    std::vector<int> members;
    int new_rank = -1;
    for (int i : order) {
      if (i == rank_) new_rank = static_cast<int>(members.size());
      members.push_back(members_[i]);
    }
    const int ctx = world_->context_for(ctx_, split_seq_++, color);
    return std::make_unique<ThreadTransport>(world_, ctx, std::move(members), new_rank);
  }

 private:
  void check_peer(int peer, int tag) const {
    TZ_CHECK(peer >= 0 && peer < size(), "peer {} of group size {}", peer, size());
    TZ_CHECK(tag >= 0 && tag <= kMaxTag, "tag {}", tag);
  }

  std::shared_ptr<ThreadWorld> world_;
  int ctx_;
  std::vector<int> members_;  // world rank of each group rank
  int rank_;
  std::uint64_t split_seq_ = 0;
};

}  // namespace

void ThreadWorldHandle::abort(const std::string& reason) const {
  world->abort(reason);
}

ThreadWorldHandle make_thread_world(int n) {
  TZ_CHECK(n >= 1, "thread world of {} ranks", n);
  ThreadWorldHandle h;
  h.world = std::make_shared<ThreadWorld>(n);
  std::vector<int> members(n);
  for (int i = 0; i < n; ++i) members[i] = i;
  for (int i = 0; i < n; ++i)
    h.transports.push_back(std::make_unique<ThreadTransport>(h.world, 0, members, i));
  return h;
}

}  // namespace tz
