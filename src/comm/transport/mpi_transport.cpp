// MPI transport (mpi_transport.hpp). Requests live in a slot table (id = slot + 1) so that the
// algorithms' Request handles stay plain values. Waiting polls MPI_Testsome: Open MPI's shared-memory
// path moves a large message only while both sides call into MPI, so polls only yield the CPU
// (sched_yield) while requests keep completing, and sleep only after kYieldFor without any: an idle
// oversubscribed rank costs little, a busy one stays fast.
#include "comm/transport/mpi_transport.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <climits>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

// Waiting: poll back to back for kSpinFor after the last completion (or the start), then poll and
// yield (sched_yield) until kYieldFor, then poll and sleep from kFirstNap doubling to kLongestNap.
// Open MPI's shared-memory path moves a large message one fragment per poll, and only while both
// sides poll: yielding after every poll cost a full scheduler slice per fragment on this loaded
// machine (a 16 MiB all-gather on 2 ranks took 60 ms instead of 2 ms), and sleeping early is worse.
constexpr auto kSpinFor = std::chrono::microseconds(200);
constexpr auto kYieldFor = std::chrono::milliseconds(20);
constexpr auto kFirstNap = std::chrono::microseconds(50);
constexpr auto kLongestNap = std::chrono::microseconds(1000);

bool g_serialized = false;
std::mutex g_mpi_mutex;
std::atomic<bool> g_aborted{false};
std::mutex g_abort_mutex;
std::string g_abort_reason;

void throw_if_aborted() {
  if (!g_aborted.load(std::memory_order_acquire)) return;
  std::lock_guard lock(g_abort_mutex);
  throw CommError("aborted: " + g_abort_reason);
}

// Holds the process-wide MPI lock when the thread level requires it.
class MpiLock {
 public:
  MpiLock() {
    if (g_serialized) lock_ = std::unique_lock(g_mpi_mutex);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {
    MpiLock lock;
    TZ_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TZ_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TZ_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    MPI_Group group, world;
    TZ_MPI_CHECK(MPI_Comm_group(comm_, &group));
    TZ_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    std::vector<int> mine(size_);
    for (int i = 0; i < size_; ++i) mine[i] = i;
    world_ranks_.resize(size_);
    TZ_MPI_CHECK(MPI_Group_translate_ranks(group, size_, mine.data(), world, world_ranks_.data()));
    TZ_MPI_CHECK(MPI_Group_free(&group));
    TZ_MPI_CHECK(MPI_Group_free(&world));
  }

  ~MpiTransport() override {
    MpiLock lock;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);  // best effort in a destructor: no throw
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank(int peer) const override { return world_ranks_.at(peer); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    check(bytes, peer, tag);
    MpiLock lock;
    const std::size_t slot = new_slot();
    TZ_MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &slots_[slot]));
    return Request{slot + 1, peer, true};
  }

  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    check(bytes, peer, tag);
    MpiLock lock;
    const std::size_t slot = new_slot();
    expected_bytes_[slot] = static_cast<int>(bytes);
    TZ_MPI_CHECK(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &slots_[slot]));
    return Request{slot + 1, peer, false};
  }

  bool wait_all(std::span<Request> requests, Deadline deadline) override {
    std::vector<MPI_Request> mpi;
    std::vector<std::size_t> which;  // index into `requests`
    for (std::size_t i = 0; i < requests.size(); ++i)
      if (requests[i].pending()) {
        mpi.push_back(slots_[requests[i].id - 1]);
        which.push_back(i);
      }
    std::vector<int> done(mpi.size());
    std::vector<MPI_Status> statuses(mpi.size());
    std::size_t left = mpi.size();
    int idle_polls = 0;
    auto idle_since = Clock::now();
    std::chrono::microseconds nap = kFirstNap;
    while (left > 0) {
      throw_if_aborted();
      int count = 0;
      {
        MpiLock lock;
        TZ_MPI_CHECK(
            MPI_Testsome(static_cast<int>(mpi.size()), mpi.data(), &count, done.data(), statuses.data()));
      }
      if (count == MPI_UNDEFINED) count = 0;
      for (int k = 0; k < count; ++k) {
        const std::size_t i = which[done[k]];
        if (!requests[i].is_send) check_received(statuses[k], requests[i]);
        release_slot(requests[i].id - 1);
        requests[i] = Request{};
        --left;
      }
      if (left == 0) break;
      const auto now = Clock::now();
      if (count > 0) {
        idle_polls = 0;
        idle_since = now;
        nap = kFirstNap;
        continue;
      }
      if (now >= deadline) {
        return false;  // pending handles are unchanged in slots_ (MPI_Testsome only nulls completed ones)
      }
      if (now - idle_since < kSpinFor) {
        continue;  // a message is probably streaming: keep feeding it
      } else if (++idle_polls < 64 || now - idle_since < kYieldFor) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min<std::chrono::microseconds>(nap * 2, kLongestNap);
      }
    }
    return true;
  }

  void cancel(std::span<Request> requests) override {
    MpiLock lock;
    for (Request& r : requests) {
      if (!r.pending()) continue;
      MPI_Request& req = slots_[r.id - 1];
      if (!r.is_send) {
        // A cancelled receive completes promptly; its buffer is then free.
        MPI_Cancel(&req);
        int flag = 0;
        const auto give_up = Clock::now() + std::chrono::seconds(1);
        while (!flag && Clock::now() < give_up) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      }
      if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);  // sends: the job is aborted anyway
      release_slot(r.id - 1);
      r = Request{};
    }
  }

  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    // Agree first, with a deadline, so that MPI_Comm_split (which has none) is only entered once
    // every rank is known to be there.
    exchange_split_keys(*this, color, key, deadline);
    MPI_Comm sub;
    {
      MpiLock lock;
      TZ_MPI_CHECK(MPI_Comm_split(comm_, color, key, &sub));
    }
    return std::make_unique<MpiTransport>(sub);
  }

  // Ranks on one host can map one segment; SharedArena::open verifies it (a token written by group
  // rank 0 must be read back by every rank) and every rank falls back to the transport when not.
  bool can_share_memory() const override { return true; }
  void check_aborted() override { throw_if_aborted(); }

  double now_s() const override { return MPI_Wtime(); }

 private:
  void check(std::size_t bytes, int peer, int tag) const {
    TZ_CHECK(bytes <= static_cast<std::size_t>(INT_MAX), "message of {} bytes: larger than MPI's int count",
             bytes);
    TZ_CHECK(peer >= 0 && peer < size_, "peer {} of group size {}", peer, size_);
    TZ_CHECK(tag >= 0 && tag <= kMaxTag, "tag {}", tag);
  }

  // A shorter message than posted is a size mismatch between ranks (a longer one fails in MPI).
  void check_received(MPI_Status& status, const Request& r) const {
    int got = 0;
    TZ_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got));
    const int expected = expected_bytes_[r.id - 1];
    if (got != expected)
      throw CommError(
          fmt::format("message size mismatch: world rank {} sent {} bytes, world rank {} expected {}",
                      world_rank(r.peer), got, world_rank(rank_), expected));
  }

  std::size_t new_slot() {
    if (free_.empty()) {
      slots_.push_back(MPI_REQUEST_NULL);
      expected_bytes_.push_back(0);
      return slots_.size() - 1;
    }
    const std::size_t s = free_.back();
    free_.pop_back();
    return s;
  }
  void release_slot(std::size_t s) {
    slots_[s] = MPI_REQUEST_NULL;
    free_.push_back(s);
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<int> world_ranks_;
  std::vector<MPI_Request> slots_;
  std::vector<int> expected_bytes_;  // per slot, for receives
  std::vector<std::size_t> free_;
};

}  // namespace

void set_mpi_serialized(bool serialized) {
  g_serialized = serialized;
}

std::unique_lock<std::mutex> mpi_call_lock() {
  return g_serialized ? std::unique_lock(g_mpi_mutex) : std::unique_lock<std::mutex>();
}

void abort_mpi_transports(const std::string& reason) {
  std::lock_guard lock(g_abort_mutex);
  if (g_aborted.load()) return;
  g_abort_reason = reason;
  g_aborted.store(true, std::memory_order_release);
}

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm) {
  return std::make_unique<MpiTransport>(comm);
}

}  // namespace tz
