// Shared-memory segment of one group (shared_arena.hpp). Set-up is one small collective: group rank 0
// creates a POSIX shm object (O_EXCL, a unique name, space reserved with posix_fallocate so a full
// /dev/shm fails here and not later with SIGBUS), writes a random token and sends name and token to
// every rank; each rank maps it and checks the token; an all-gather of the outcomes decides for all,
// and rank 0 then unlinks the name (the mappings stay valid; nothing is left behind in /dev/shm).
#include "comm/shared_arena.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "comm/algorithms.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

constexpr std::size_t kSegmentHeader = 64;
constexpr std::size_t kRankHeader = 128;  // two counters, one cache line each
constexpr int kSetupTag = 1;              // tag 0 is the ring's

struct SetupMessage {
  char name[64] = {};
  std::uint64_t token = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ok = 0;
};

std::size_t rank_stride(std::size_t slot_bytes) {
  return kRankHeader + 2 * slot_bytes;
}

// Maps `bytes` of the shm object `name`; null on any failure (the caller decides with its peers).
std::byte* map_segment(const char* name, std::size_t bytes, bool create) {
  const int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
  if (fd < 0) return nullptr;
  bool sized = false;
  if (create) {
    sized = posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
  } else {
    struct stat st {};
    sized = fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= bytes;
  }
  void* p = sized ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name);
    return nullptr;
  }
  return static_cast<std::byte*>(p);
}

std::uint64_t random_token() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ((std::uint64_t{rd()} << 32) ^ rd() ^ now) | 1;  // never 0, which a fresh segment holds
}

}  // namespace

std::unique_ptr<SharedArena> SharedArena::open(Collective& c, std::size_t slot_bytes) {
  const int p = c.size(), r = c.rank();
  slot_bytes = (std::max<std::size_t>(slot_bytes, 64) + 63) / 64 * 64;
  const std::size_t total = kSegmentHeader + p * rank_stride(slot_bytes);
  SetupMessage msg;
  std::byte* base = nullptr;
  if (r == 0) {
    static std::atomic<unsigned> serial{0};
    const std::uint64_t token = random_token();
    fmt::format_to_n(msg.name, sizeof(msg.name) - 1, "/tierzero-{}-{}-{:08x}", getpid(), serial++,
                     static_cast<std::uint32_t>(token));
    base = map_segment(msg.name, total, true);
    if (base != nullptr) {
      std::memcpy(base, &token, sizeof(token));
      msg.token = token;
      msg.bytes = total;
      msg.ok = 1;
    }
    std::vector<Request> sends;
    for (int q = 1; q < p; ++q) sends.push_back(c.send(&msg, sizeof(msg), q, kSetupTag));
    c.wait(sends);
  } else {
    Request req = c.recv(&msg, sizeof(msg), 0, kSetupTag);
    c.wait(req);
    if (msg.ok && msg.bytes == total) {
      msg.name[sizeof(msg.name) - 1] = '\0';
      base = map_segment(msg.name, total, false);
      std::uint64_t token = 0;
      if (base != nullptr) std::memcpy(&token, base, sizeof(token));
      if (base != nullptr && token != msg.token) {  // another host's object of the same name
        munmap(base, total);
        base = nullptr;
      }
    }
  }
  const std::byte mine{base != nullptr};
  std::vector<std::byte> all(p);
  all_gather_ring(c, &mine, all.data(), uniform_block_offsets(1, p));
  if (r == 0 && base != nullptr) shm_unlink(msg.name);  // every rank that could map it has
  const bool everyone = std::all_of(all.begin(), all.end(), [](std::byte b) { return b != std::byte{0}; });
  if (!everyone) {
    if (base != nullptr) munmap(base, total);
    return nullptr;
  }
  return std::unique_ptr<SharedArena>(new SharedArena(base, total, p, slot_bytes));
}

SharedArena::SharedArena(std::byte* base, std::size_t mapped_bytes, int ranks, std::size_t slot_bytes)
    : base_(base), mapped_bytes_(mapped_bytes), ranks_(ranks), slot_bytes_(slot_bytes) {}

SharedArena::~SharedArena() {
  munmap(base_, mapped_bytes_);
}

std::byte* SharedArena::rank_base(int rank) const {
  return base_ + kSegmentHeader + static_cast<std::size_t>(rank) * rank_stride(slot_bytes_);
}

std::uint64_t& SharedArena::counter(int rank, int which) const {
  return *reinterpret_cast<std::uint64_t*>(rank_base(rank) + 64 * which);
}

std::byte* SharedArena::buffer(int rank, std::uint64_t round) const {
  return rank_base(rank) + kRankHeader + (round % 2) * slot_bytes_;
}

void SharedArena::wait_peers(Collective& c, bool written_counter, std::uint64_t round) const {
  Backoff backoff;
  std::vector<int> behind;
  for (;;) {
    behind.clear();
    for (int q = 0; q < ranks_; ++q) {
      if (q == c.rank()) continue;
      const std::uint64_t v = (written_counter ? written(q) : read(q)).load(std::memory_order_acquire);
      if (v < round) behind.push_back(q);
    }
    if (behind.empty()) return;
    if (backoff.yielding()) {
      c.transport().check_aborted();
      if (Clock::now() >= c.deadline()) c.fail_not_arrived(behind);
    }
    backoff.pause();
  }
}

void Backoff::pause() {
  if (polls_ < kSpinPolls) {
    ++polls_;
    return;
  }
  if (std::chrono::steady_clock::now() - since_ < std::chrono::milliseconds(10)) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(nap_us_));
  nap_us_ = std::min(nap_us_ * 2, 1000);
}

}  // namespace tz
