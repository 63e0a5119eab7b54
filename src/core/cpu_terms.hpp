// CPU time by term: what a rank's threads spend their CPU on (docs/engine.md "What the engine adds").
// A rank binds its counters to its thread (CpuCountersBinding); code marks what it runs with a
// CpuTermScope, and every moment of thread CPU time (CLOCK_THREAD_CPUTIME_ID) inside a binding is
// charged to exactly one term: the innermost open scope's (nested scopes pause the outer ones, so
// terms never overlap and add up to the CPU time the binding saw). Work a rank hands to another
// thread (a host stream's task, a communicator's progress, a kernel pool's chunk) carries the
// issuer's counters along (capture_cpu_context / CpuContextScope), so it is charged to that rank
// even where several ranks share a process. A CpuWaitScope also adds the wall time it was blocked.
// Cost: one clock read per scope boundary, nothing per element; with no binding a scope does nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace tz {

enum class CpuTerm : int {
  model,              // the model's forward and backward kernels
  packing,            // copying gathered ranges between engine buffers (hpZ secondary shard, W slices)
  narrowing,          // fp32 <-> bf16: gradients narrowed for sending, weights widened, refreshes narrowed
  collective_copies,  // a communicator running a collective: copies into/out of its buffers, the
                      // transport and the sums of reductions, on its progress thread
  quantization,       // qwZ/qgZ quantize and dequantize
  grad_accumulate,    // adding reduced gradient shards into the fp32 G shard
  collective_wait,    // the rank's thread blocked on a collective (CPU spent there; wall time apart)
  optimizer,          // the gradient norm, the non-finite check and AdamW on the O shard
  other,              // the rest: batches, scalars, buffer zeroing, issuing collectives
};
inline constexpr int kCpuTermCount = static_cast<int>(CpuTerm::other) + 1;

std::string_view cpu_term_name(CpuTerm term);

// Seconds per term (CPU time) and the wall seconds of the waits.
struct CpuTermSeconds {
  std::array<double, kCpuTermCount> cpu_s{};
  double wait_wall_s = 0;
  double& operator[](CpuTerm t) { return cpu_s[static_cast<int>(t)]; }
  double operator[](CpuTerm t) const { return cpu_s[static_cast<int>(t)]; }
  double total_cpu_s() const;
  CpuTermSeconds operator-(const CpuTermSeconds& earlier) const;
};

// One rank's counters; safe to add to from any thread. Owned by a shared_ptr, so that work running
// on another thread keeps them alive until it has charged its last moment (it may finish after
// the rank has stopped waiting for it); counters owned otherwise are not charged for such work.
class CpuTermCounters : public std::enable_shared_from_this<CpuTermCounters> {
 public:
  void add_cpu_ns(CpuTerm term, std::int64_t ns) {
    cpu_ns_[static_cast<int>(term)].fetch_add(ns, std::memory_order_relaxed);
  }
  void add_wait_wall_ns(std::int64_t ns) { wait_wall_ns_.fetch_add(ns, std::memory_order_relaxed); }
  // The totals so far (scopes still open are counted up to their last boundary).
  CpuTermSeconds totals() const;

 private:
  std::array<std::atomic<std::int64_t>, kCpuTermCount> cpu_ns_{};
  std::atomic<std::int64_t> wait_wall_ns_{0};
};

// CPU time of the calling thread, in nanoseconds.
std::int64_t thread_cpu_ns();

// Charges the calling thread's CPU time to `counters` for its lifetime, under `term` unless a scope
// inside says otherwise (null: charges nothing, the counters of an outer binding pause).
class CpuCountersBinding {
 public:
  CpuCountersBinding(CpuTermCounters* counters, CpuTerm term);
  ~CpuCountersBinding();
  CpuCountersBinding(const CpuCountersBinding&) = delete;
  CpuCountersBinding& operator=(const CpuCountersBinding&) = delete;

 private:
  bool open_;
};

// Charges the calling thread's CPU time to `term` for its lifetime (within the thread's binding).
class CpuTermScope {
 public:
  explicit CpuTermScope(CpuTerm term);
  ~CpuTermScope();
  CpuTermScope(const CpuTermScope&) = delete;
  CpuTermScope& operator=(const CpuTermScope&) = delete;

 private:
  bool open_;
};

// A collective wait: CPU time to collective_wait, and the wall time to the wait total.
class CpuWaitScope {
 public:
  CpuWaitScope();
  ~CpuWaitScope();
  CpuWaitScope(const CpuWaitScope&) = delete;
  CpuWaitScope& operator=(const CpuWaitScope&) = delete;

 private:
  // The wall clock is read outside the CPU scope, so the wall time covers the CPU time's window.
  CpuTermCounters* counters_ = nullptr;
  std::int64_t wall0_ns_ = 0;
  std::optional<CpuTermScope> scope_;
};

// What work handed to another thread is charged to: the issuer's counters and current term.
struct CpuContext {
  CpuTermCounters* counters = nullptr;
  CpuTerm term = CpuTerm::other;
};
CpuContext capture_cpu_context();

// Runs the calling thread under a captured context for its lifetime (nothing when it is empty).
class CpuContextScope {
 public:
  explicit CpuContextScope(const CpuContext& context) : binding_(context.counters, context.term) {}

 private:
  CpuCountersBinding binding_;
};

}  // namespace tz
