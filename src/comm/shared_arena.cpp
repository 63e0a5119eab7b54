// Shared-memory segment of one group (shared_arena.hpp). Set-up is one small collective: group rank 0
// creates a POSIX shm object (O_EXCL, a name holding its pid, space reserved with posix_fallocate so a
// full /dev/shm fails here and not later with SIGBUS), writes a random token and sends name and token
// to every rank; each rank maps it, checks the token and counts itself in the segment header; an
// all-gather of the outcomes decides for all.
//
// The name lives in /dev/shm only while some rank may still need to open it: the rank whose count
// completes the group unlinks it at once (before the all-gather, so a rank stalled or killed in
// the all-gather leaves nothing); a throw on any rank that knows the name (a timeout, an aborted
// world) unlinks it on the way out; group rank 0 unlinks it after the all-gather when some rank
// could not map it; a termination signal in that window (mpirun's SIGTERM to the other ranks when
// one fails) unlinks it in a handler. Only a process killed with SIGKILL between creating and the
// last mapping can leave it, and the next tierzero process on the host sweeps it (its pid is dead)
// when it starts.
#include "comm/shared_arena.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "comm/algorithms.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

constexpr std::size_t kSegmentHeader = 64;  // token at 0, mapped-rank count at 8
constexpr std::size_t kRankHeader = 128;    // two counters and their sleeper counts, a cache line each
// Then the cross-memory header: the rank's pid (a cache line), then p (address, bytes) entries, the
// blocks of its send buffer the all-to-all's peers read in place.
std::size_t cross_header_bytes(int p) {
  return 64 + (16 * static_cast<std::size_t>(p) + 63) / 64 * 64;
}
// What a peer reads through process_vm_readv to learn whether this host lets ranks read each other.
constexpr std::uint64_t kCrossProbe = 0x7a65726f63726f73ull;
constexpr int kSetupTag = 1;  // tag 0 is the algorithms'
constexpr std::string_view kPrefix = "tierzero-";

struct SetupMessage {
  char name[64] = {};
  std::uint64_t token = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ok = 0;
};

// Waiting (shared_arena.hpp): poll for kSpinAlone when the host has a core per rank (the peer is
// probably running and publishes within about a piece's copy time; a futex wake-up costs more than
// that), for kSpinCrowded when its ranks outnumber the cores (the peer, or a rank of another group,
// probably needs this core); then sleep in slices of kSleepSliceNs. The host's ranks count, not the
// group's: with 8 ranks of 2-rank groups on 2 cores, polling 200 us cost 6-14% of a training step.
constexpr auto kSpinAlone = std::chrono::microseconds(200);
constexpr auto kSpinCrowded = std::chrono::microseconds(5);
constexpr long kSleepSliceNs = 5'000'000;

static_assert(std::endian::native == std::endian::little, "futex words are the counters' low halves");

// The 32-bit futex word of a 64-bit counter: its low half, which changes with every publication.
std::uint32_t* low_word(std::uint64_t* counter) {
  return reinterpret_cast<std::uint32_t*>(counter);
}

// Shared (not FUTEX_PRIVATE) operations: the words live in memory mapped by several processes.
long futex(std::uint32_t* word, int op, std::uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::size_t rank_stride(std::size_t slot_bytes, int p) {
  return kRankHeader + cross_header_bytes(p) + 2 * slot_bytes;
}

// After the ranks: a doorbell line per rank (the word, then its sleeper count), then per ordered
// pair `filled` and `freed` on a cache line each and the block headers, three words each (the call
// stored plus one, so that the zero-filled segment reads as no call; the first chunk; the bytes).
constexpr std::size_t kDoorbellBytes = 64, kPairCountersBytes = 128, kPairHeaderBytes = 24;
constexpr std::size_t kPairEntryBytes = kPairCountersBytes + kPairHeaderBytes * SharedArena::kPairBlockSlots;
std::size_t pair_area_bytes(int p) {
  return kDoorbellBytes * p + kPairEntryBytes * static_cast<std::size_t>(p) * p;
}

// A mapping that is undone unless released (every throw between mmap and the arena's constructor).
struct Mapping {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }
  void reset() {
    if (base != nullptr) munmap(base, bytes);
    base = nullptr;
  }
  std::byte* release() { return std::exchange(base, nullptr); }
  std::atomic_ref<std::uint64_t> mapped_ranks() const {
    return std::atomic_ref(*reinterpret_cast<std::uint64_t*>(base + 8));
  }
};

// Names this process has armed (created or opened) and not yet unlinked, so that a termination
// signal in the set-up window unlinks them too: when one rank of an MPI job fails, mpirun sends
// SIGTERM to the others, and one of them may be waiting in set-up with the name still linked.
// Lock-free slots, since the handler may run at any point: 0 free, 1 being filled, 2 armed.
constexpr int kPendingSlots = 32;
struct PendingName {
  std::atomic<int> state{0};
  char path[96] = {};  // "/dev/shm/tierzero-..."; unlink(2) is async-signal-safe, shm_unlink is not listed
};
PendingName g_pending[kPendingSlots];
constexpr int kTermSignals[] = {SIGTERM, SIGINT, SIGHUP};
struct sigaction g_previous[std::size(kTermSignals)];

void unlink_pending_on_signal(int sig, siginfo_t* info, void* context) {
  for (PendingName& pending : g_pending)
    if (pending.state.load(std::memory_order_acquire) == 2) ::unlink(pending.path);
  for (std::size_t i = 0; i < std::size(kTermSignals); ++i) {
    if (kTermSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if (prev.sa_flags & SA_SIGINFO) {
      if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, context);
    } else if (prev.sa_handler == SIG_DFL) {
      // Terminate as the signal would have: default action, delivered when this handler returns.
      sigaction(sig, &prev, nullptr);
      raise(sig);
    } else if (prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
    }
  }
}

// Installed once, before the first name is armed; chains to the handlers that were there.
void install_unlink_on_signal() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (std::size_t i = 0; i < std::size(kTermSignals); ++i) {
      struct sigaction prev {};
      if (sigaction(kTermSignals[i], nullptr, &prev) != 0) continue;
      if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) continue;  // ignored: keep it so
      g_previous[i] = prev;
      struct sigaction ours {};
      ours.sa_sigaction = unlink_pending_on_signal;
      ours.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&ours.sa_mask);
      sigaction(kTermSignals[i], &ours, nullptr);
    }
  });
}

// Unlinks the name when it goes out of scope, unless done() said it is already gone (or was never
// created), and while armed, on a termination signal. Unlinking twice is harmless: the name holds
// the creator's pid, a serial and a random token, so no other segment has it.
class NameGuard {
 public:
  NameGuard() = default;
  NameGuard(const NameGuard&) = delete;
  NameGuard& operator=(const NameGuard&) = delete;
  ~NameGuard() { unlink(); }
  void arm(const char* name) {
    unlink();
    name_ = name;
    if (name_.empty()) return;
    install_unlink_on_signal();
    for (int i = 0; i < kPendingSlots; ++i) {
      int expected = 0;
      if (!g_pending[i].state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) continue;
      fmt::format_to_n(g_pending[i].path, sizeof(g_pending[i].path) - 1, "/dev/shm{}", name_);
      g_pending[i].state.store(2, std::memory_order_release);
      slot_ = i;
      break;
    }  // all slots taken (32 set-ups at once): this one is covered by the paths above only
  }
  // Forgets the name without unlinking it (another rank unlinks it).
  void disarm() {
    release_slot();
    name_.clear();
  }
  void unlink() {
    if (!name_.empty()) shm_unlink(name_.c_str());
    disarm();
  }

 private:
  void release_slot() {
    if (slot_ < 0) return;
    g_pending[slot_].state.store(1, std::memory_order_release);  // the handler skips it from here
    std::memset(g_pending[slot_].path, 0, sizeof(g_pending[slot_].path));
    g_pending[slot_].state.store(0, std::memory_order_release);
    slot_ = -1;
  }

  std::string name_;
  int slot_ = -1;
};

// Maps `bytes` of the shm object `name`; leaves `m` empty on any failure (the caller decides with
// its peers).
void map_segment(Mapping& m, const char* name, std::size_t bytes, bool create) {
  const int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
  if (fd < 0) return;
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
    return;
  }
  m.base = static_cast<std::byte*>(p);
  m.bytes = bytes;
}

std::uint64_t random_token() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ((std::uint64_t{rd()} << 32) ^ rd() ^ now) | 1;  // never 0, which a fresh segment holds
}

// Counts this rank in the segment; the rank that completes the group unlinks the name.
void count_mapped(Mapping& m, NameGuard& name, int p) {
  if (m.mapped_ranks().fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint64_t>(p))
    name.unlink();
}

}  // namespace

std::vector<std::string> sweep_stale_shared_segments() {
  std::vector<std::string> removed;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return removed;
  while (const dirent* e = readdir(dir)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view rest = name.substr(kPrefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash > 9) continue;
    pid_t pid = 0;
    bool digits = true;
    for (char ch : rest.substr(0, dash)) {
      digits = digits && ch >= '0' && ch <= '9';
      pid = pid * 10 + (ch - '0');
    }
    if (!digits || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge (EPERM)
    const std::string path = "/" + std::string(name);
    if (shm_unlink(path.c_str()) == 0) removed.emplace_back(name);
  }
  closedir(dir);
  return removed;
}

void sweep_stale_shared_segments_once() {
  static std::once_flag swept;
  std::call_once(swept, [] { sweep_stale_shared_segments(); });
}

bool host_crowded(int group_ranks, int ranks_on_host, long cpus) {
  return cpus <= 0 || std::max(group_ranks, ranks_on_host) > cpus;
}

Clock::duration arena_spin(int group_ranks, int ranks_on_host, long cpus) {
  return host_crowded(group_ranks, ranks_on_host, cpus) ? Clock::duration(kSpinCrowded)
                                                        : Clock::duration(kSpinAlone);
}

std::unique_ptr<SharedArena> SharedArena::open(Collective& c, std::size_t slot_bytes, bool cross_memory,
                                               int ranks_on_host) {
  sweep_stale_shared_segments_once();

  const int p = c.size(), r = c.rank();
  slot_bytes = std::max<std::size_t>({slot_bytes, 64, 8 * static_cast<std::size_t>(p)});
  slot_bytes = (slot_bytes + 63) / 64 * 64;
  const std::size_t total = kSegmentHeader + p * rank_stride(slot_bytes, p) + pair_area_bytes(p);
  SetupMessage msg;
  Mapping m;
  NameGuard name;  // unlinks on every exit from here on, thrown or not, unless already unlinked
  if (r == 0) {
    static std::atomic<unsigned> serial{0};
    const std::uint64_t token = random_token();
    fmt::format_to_n(msg.name, sizeof(msg.name) - 1, "/{}{}-{}-{:08x}", kPrefix, getpid(), serial++,
                     static_cast<std::uint32_t>(token));
    map_segment(m, msg.name, total, true);
    if (m.base != nullptr) {
      name.arm(msg.name);
      std::memcpy(m.base, &token, sizeof(token));
      msg.token = token;
      msg.bytes = total;
      msg.ok = 1;
      count_mapped(m, name, p);
    }
    std::vector<Request> sends;
    for (int q = 1; q < p; ++q) sends.push_back(c.send(&msg, sizeof(msg), q, kSetupTag));
    c.wait(sends);
  } else {
    Request req = c.recv(&msg, sizeof(msg), 0, kSetupTag);
    c.wait(req);
    if (msg.ok && msg.bytes == total) {
      msg.name[sizeof(msg.name) - 1] = '\0';
      map_segment(m, msg.name, total, false);
      std::uint64_t token = 0;
      if (m.base != nullptr) std::memcpy(&token, m.base, sizeof(token));
      if (m.base != nullptr && token != msg.token) m.reset();  // another host's object: not ours to unlink
      if (m.base != nullptr) {
        name.arm(msg.name);
        count_mapped(m, name, p);
      }
    }
  }
  // Bit 0: this rank mapped the segment; bit 1: its host looks crowded. The group agrees on both, so
  // that every rank picks the same algorithm (resolve_shared_all_to_all).
  const bool crowded_here = host_crowded(p, ranks_on_host, sysconf(_SC_NPROCESSORS_ONLN));
  const auto mine = static_cast<std::byte>((m.base != nullptr ? 1 : 0) | (crowded_here ? 2 : 0));
  std::vector<std::byte> all(p);
  all_gather_ring(c, &mine, all.data(), uniform_block_offsets(1, p));
  if (r != 0) name.disarm();  // rank 0 unlinks below (if a rank could not map, nobody counted it)
  name.unlink();
  const bool everyone =
      std::all_of(all.begin(), all.end(), [](std::byte b) { return (b & std::byte{1}) != std::byte{0}; });
  if (!everyone) return nullptr;
  std::unique_ptr<SharedArena> arena(new SharedArena(m.release(), total, p, r, slot_bytes, ranks_on_host));
  arena->crowded_ =
      std::any_of(all.begin(), all.end(), [](std::byte b) { return (b & std::byte{2}) != std::byte{0}; });
  if (cross_memory) arena->probe_cross_memory(c);
  return arena;
}

void SharedArena::probe_cross_memory(Collective& c) {
  // Each rank publishes its pid and the address of a probe word; after a first exchange (every
  // header is written), each reads every peer's word with process_vm_readv; a second exchange
  // agrees: all ranks must take the same path.
  static const std::uint64_t probe = kCrossProbe;
  auto* head = reinterpret_cast<std::uint64_t*>(rank_base(rank_) + kRankHeader);
  head[0] = static_cast<std::uint64_t>(getpid());
  head[1] = reinterpret_cast<std::uint64_t>(&probe);
  const int p = ranks_;
  std::byte none{0};
  std::vector<std::byte> all(p);
  all_gather_ring(c, &none, all.data(), uniform_block_offsets(1, p));
  std::byte ok{1};
  for (int q = 0; q < p; ++q) {
    if (q == rank_) continue;
    const auto* theirs = reinterpret_cast<const std::uint64_t*>(rank_base(q) + kRankHeader);
    std::uint64_t word = 0;
    iovec local{&word, sizeof(word)};
    iovec remote{reinterpret_cast<void*>(theirs[1]), sizeof(word)};
    if (process_vm_readv(static_cast<pid_t>(theirs[0]), &local, 1, &remote, 1, 0) != sizeof(word) ||
        word != kCrossProbe)
      ok = std::byte{0};
  }
  all_gather_ring(c, &ok, all.data(), uniform_block_offsets(1, p));
  cross_memory_ = std::all_of(all.begin(), all.end(), [](std::byte b) { return b != std::byte{0}; });
}

std::uint64_t* SharedArena::cross_entry(int rank, int peer) const {
  return reinterpret_cast<std::uint64_t*>(rank_base(rank) + kRankHeader + 64 +
                                          16 * static_cast<std::size_t>(peer));
}

void SharedArena::offer_block(int to, std::span<const std::byte> block) {
  std::uint64_t* e = cross_entry(rank_, to);
  e[0] = reinterpret_cast<std::uint64_t>(block.data());
  e[1] = block.size();
}

void SharedArena::read_offered(Collective& c, int from, std::span<std::byte> out) const {
  const std::uint64_t* e = cross_entry(from, rank_);
  if (e[1] != out.size())
    throw CommError(fmt::format("{}: rank {} offers {} bytes where {} are expected", c.describe(), from, e[1],
                                out.size()));
  const auto pid = static_cast<pid_t>(*reinterpret_cast<const std::uint64_t*>(rank_base(from) + kRankHeader));
  for (std::size_t done = 0; done < out.size();) {
    iovec local{out.data() + done, out.size() - done};
    iovec remote{reinterpret_cast<std::byte*>(e[0]) + done, out.size() - done};
    const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0)
      throw CommError(fmt::format("{}: reading rank {}'s memory in place failed: {}", c.describe(), from,
                                  n < 0 ? std::strerror(errno) : "no progress"));
    done += static_cast<std::size_t>(n);
  }
}

SharedArena::SharedArena(std::byte* base, std::size_t mapped_bytes, int ranks, int rank,
                         std::size_t slot_bytes, int ranks_on_host)
    : base_(base), mapped_bytes_(mapped_bytes), ranks_(ranks), rank_(rank), slot_bytes_(slot_bytes) {
  // Online cores, not the affinity mask: mpirun pins small jobs.
  spin_ = arena_spin(ranks, ranks_on_host, sysconf(_SC_NPROCESSORS_ONLN));
}

SharedArena::~SharedArena() {
  munmap(base_, mapped_bytes_);
}

std::byte* SharedArena::rank_base(int rank) const {
  return base_ + kSegmentHeader + static_cast<std::size_t>(rank) * rank_stride(slot_bytes_, ranks_);
}

std::uint64_t* SharedArena::counter(int rank, Counter which) const {
  return reinterpret_cast<std::uint64_t*>(rank_base(rank) + 64 * static_cast<int>(which));
}

std::uint32_t* SharedArena::sleepers(int rank, Counter which) const {
  return reinterpret_cast<std::uint32_t*>(rank_base(rank) + 64 * static_cast<int>(which) + 8);
}

std::byte* SharedArena::buffer(int rank, std::uint64_t round) const {
  return rank_base(rank) + kRankHeader + cross_header_bytes(ranks_) + (round % 2) * slot_bytes_;
}

std::byte* SharedArena::pair_entry(int from, int to) const {
  return doorbell_line(ranks_) + kPairEntryBytes * (static_cast<std::size_t>(from) * ranks_ + to);
}

std::uint64_t SharedArena::pair_value(int from, int to, PairCounter which) const {
  auto* word = reinterpret_cast<std::uint64_t*>(pair_entry(from, to) + 64 * static_cast<int>(which));
  return std::atomic_ref(*word).load(std::memory_order_seq_cst);
}

namespace {
std::uint64_t* pair_header(std::byte* entry, std::uint64_t first_chunk) {
  return reinterpret_cast<std::uint64_t*>(entry + kPairCountersBytes +
                                          kPairHeaderBytes * (first_chunk % SharedArena::kPairBlockSlots));
}
}  // namespace

// Relaxed: the sender's `filled` store (seq_cst) that follows publishes them, and the receiver
// reads them after its load of `filled`.
void SharedArena::set_pair_block(int from, int to, PairBlock block) const {
  std::uint64_t* h = pair_header(pair_entry(from, to), block.first_chunk);
  std::atomic_ref(h[0]).store(block.call + 1, std::memory_order_relaxed);
  std::atomic_ref(h[1]).store(block.first_chunk, std::memory_order_relaxed);
  std::atomic_ref(h[2]).store(block.bytes, std::memory_order_relaxed);
}

SharedArena::PairBlock SharedArena::pair_block(int from, int to, std::uint64_t chunk) const {
  std::uint64_t* h = pair_header(pair_entry(from, to), chunk);
  return {.call = std::atomic_ref(h[0]).load(std::memory_order_relaxed) - 1,
          .first_chunk = std::atomic_ref(h[1]).load(std::memory_order_relaxed),
          .bytes = std::atomic_ref(h[2]).load(std::memory_order_relaxed)};
}

std::byte* SharedArena::doorbell_line(int rank) const {
  return base_ + kSegmentHeader + ranks_ * rank_stride(slot_bytes_, ranks_) + kDoorbellBytes * rank;
}

std::uint64_t SharedArena::doorbell() const {
  return std::atomic_ref(*reinterpret_cast<std::uint64_t*>(doorbell_line(rank_)))
      .load(std::memory_order_seq_cst);
}

void SharedArena::pair_publish(Collective& c, int from, int to, PairCounter which,
                               std::uint64_t value) const {
  c.transport().inject_delay();
  auto* word = reinterpret_cast<std::uint64_t*>(pair_entry(from, to) + 64 * static_cast<int>(which));
  std::atomic_ref(*word).store(value, std::memory_order_seq_cst);
  // The rank that may wait for this counter: the consumer for `filled`, the producer for `freed`.
  const int other = which == PairCounter::filled ? to : from;
  std::byte* line = doorbell_line(other);
  auto* bell = reinterpret_cast<std::uint64_t*>(line);
  std::atomic_ref(*bell).fetch_add(1, std::memory_order_seq_cst);
  if (std::atomic_ref(*reinterpret_cast<std::uint32_t*>(line + 8)).load(std::memory_order_seq_cst) > 0)
    futex(low_word(bell), FUTEX_WAKE, INT_MAX, nullptr);
}

bool SharedArena::wait_doorbell(Collective& c, std::uint64_t seen) const {
  auto* bell = reinterpret_cast<std::uint64_t*>(doorbell_line(rank_));
  std::atomic_ref value(*bell);
  const auto spin_until = Clock::now() + spin_;
  for (int polls = 1;; ++polls) {
    if (value.load(std::memory_order_seq_cst) != seen) return true;
    if (polls % 16 == 0 && Clock::now() >= spin_until) break;
    cpu_relax();
  }
  std::atomic_ref count(*reinterpret_cast<std::uint32_t*>(doorbell_line(rank_) + 8));
  for (;;) {
    count.fetch_add(1, std::memory_order_seq_cst);
    if (value.load(std::memory_order_seq_cst) == seen) {
      const timespec slice{0, kSleepSliceNs};
      futex(low_word(bell), FUTEX_WAIT, static_cast<std::uint32_t>(seen), &slice);
    }
    count.fetch_sub(1, std::memory_order_seq_cst);
    if (value.load(std::memory_order_acquire) != seen) return true;
    c.transport().check_aborted();
    if (Clock::now() >= c.deadline()) return false;
  }
}

bool SharedArena::reached(int rank, Counter which, std::uint64_t round) const {
  return std::atomic_ref(*counter(rank, which)).load(std::memory_order_acquire) >= round;
}

void SharedArena::publish(Collective& c, Counter which, std::uint64_t round) const {
  c.transport().inject_delay();
  // seq_cst store, then seq_cst load of the sleeper count: a sleeper that registered before this
  // load is woken; one registering after it sees the new value before it sleeps (sleep_until).
  std::atomic_ref(*counter(rank_, which)).store(round, std::memory_order_seq_cst);
  if (std::atomic_ref(*sleepers(rank_, which)).load(std::memory_order_seq_cst) > 0)
    futex(low_word(counter(rank_, which)), FUTEX_WAKE, INT_MAX, nullptr);
}

bool SharedArena::sleep_until(Collective& c, int rank, Counter which, std::uint64_t round) const {
  std::atomic_ref value(*counter(rank, which));
  std::atomic_ref count(*sleepers(rank, which));
  for (;;) {
    count.fetch_add(1, std::memory_order_seq_cst);
    const std::uint64_t seen = value.load(std::memory_order_seq_cst);
    if (seen < round) {
      // Returns at a wake-up, when the counter's low word already differs from `seen`, or after the
      // slice; each case rechecks below.
      const timespec slice{0, kSleepSliceNs};
      futex(low_word(counter(rank, which)), FUTEX_WAIT, static_cast<std::uint32_t>(seen), &slice);
    }
    count.fetch_sub(1, std::memory_order_seq_cst);
    if (value.load(std::memory_order_acquire) >= round) return true;
    c.transport().check_aborted();
    if (Clock::now() >= c.deadline()) return false;
  }
}

bool SharedArena::try_wait(Collective& c, int rank, Counter which, std::uint64_t round) const {
  // Under delay injection, a pause between seeing the counter and using the memory behind it, where
  // a missing wait of another rank would show.
  if (reached(rank, which, round)) return c.transport().inject_delay(), true;
  const auto spin_until = Clock::now() + spin_;
  for (int polls = 1;; ++polls) {
    if (reached(rank, which, round)) return c.transport().inject_delay(), true;
    if (polls % 16 == 0 && Clock::now() >= spin_until) break;
    cpu_relax();
  }
  if (!sleep_until(c, rank, which, round)) return false;
  c.transport().inject_delay();
  return true;
}

void SharedArena::wait(Collective& c, int rank, Counter which, std::uint64_t round) const {
  if (!try_wait(c, rank, which, round)) fail_behind(c, std::span<const int>(&rank, 1), which, round);
}

void SharedArena::wait_peers(Collective& c, Counter which, std::uint64_t round) const {
  for (int q = 0; q < ranks_; ++q)
    if (q != rank_ && !try_wait(c, q, which, round)) {
      std::vector<int> others;
      for (int o = 0; o < ranks_; ++o)
        if (o != rank_) others.push_back(o);
      fail_behind(c, others, which, round);
    }
}

void SharedArena::fail_behind(Collective& c, std::span<const int> ranks, Counter which,
                              std::uint64_t round) const {
  std::vector<int> behind;
  for (int q : ranks)
    if (!reached(q, which, round)) behind.push_back(q);
  if (behind.empty()) behind.assign(ranks.begin(), ranks.end());  // arrived right at the deadline
  c.fail_not_arrived(behind);
}

}  // namespace tz
