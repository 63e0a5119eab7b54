#include "core/cpu_terms.hpp"

#include <time.h>

#include <chrono>
#include <vector>

namespace tz {
namespace {

// The calling thread's open scopes, innermost last, and the clock at the last boundary: the time
// since is the innermost scope's.
struct CpuFrame {
  CpuTermCounters* counters;
  CpuTerm term;
};
struct ThreadCpuFrames {
  std::vector<CpuFrame> open;
  std::int64_t mark_ns = 0;
};

ThreadCpuFrames& thread_frames() {
  thread_local ThreadCpuFrames frames;
  return frames;
}

// Charges the time since the last boundary to the innermost scope; returns the clock.
std::int64_t close_interval(ThreadCpuFrames& f) {
  const std::int64_t now = thread_cpu_ns();
  if (!f.open.empty() && f.open.back().counters != nullptr)
    f.open.back().counters->add_cpu_ns(f.open.back().term, now - f.mark_ns);
  return now;
}

void push_frame(CpuTermCounters* counters, CpuTerm term) {
  ThreadCpuFrames& f = thread_frames();
  f.mark_ns = close_interval(f);
  f.open.push_back({counters, term});
}

void pop_frame() {
  ThreadCpuFrames& f = thread_frames();
  f.mark_ns = close_interval(f);
  f.open.pop_back();
}

}  // namespace

std::string_view cpu_term_name(CpuTerm term) {
  switch (term) {
    case CpuTerm::model:
      return "model";
    case CpuTerm::packing:
      return "packing";
    case CpuTerm::narrowing:
      return "narrowing";
    case CpuTerm::collective_copies:
      return "collective_copies";
    case CpuTerm::quantization:
      return "quantization";
    case CpuTerm::grad_accumulate:
      return "grad_accumulate";
    case CpuTerm::collective_wait:
      return "collective_wait";
    case CpuTerm::optimizer:
      return "optimizer";
    case CpuTerm::other:
      return "other";
  }
  return "?";
}

double CpuTermSeconds::total_cpu_s() const {
  double s = 0;
  for (double x : cpu_s) s += x;
  return s;
}

CpuTermSeconds CpuTermSeconds::operator-(const CpuTermSeconds& earlier) const {
  CpuTermSeconds d;
  for (int i = 0; i < kCpuTermCount; ++i) d.cpu_s[i] = cpu_s[i] - earlier.cpu_s[i];
  d.wait_wall_s = wait_wall_s - earlier.wait_wall_s;
  return d;
}

CpuTermSeconds CpuTermCounters::totals() const {
  CpuTermSeconds t;
  for (int i = 0; i < kCpuTermCount; ++i) t.cpu_s[i] = 1e-9 * static_cast<double>(cpu_ns_[i].load());
  t.wait_wall_s = 1e-9 * static_cast<double>(wait_wall_ns_.load());
  return t;
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// A null binding on a thread with nothing open does nothing (the common case outside an engine); one
// inside a bound thread still opens a frame, so the outer counters pause.
CpuCountersBinding::CpuCountersBinding(CpuTermCounters* counters, CpuTerm term)
    : open_(counters != nullptr || !thread_frames().open.empty()) {
  if (open_) push_frame(counters, term);
}

CpuCountersBinding::~CpuCountersBinding() {
  if (open_) pop_frame();
}

CpuTermScope::CpuTermScope(CpuTerm term) : open_(!thread_frames().open.empty()) {
  if (open_) push_frame(thread_frames().open.back().counters, term);
}

CpuTermScope::~CpuTermScope() {
  if (open_) pop_frame();
}

namespace {

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CpuWaitScope::CpuWaitScope() {
  const auto& open = thread_frames().open;
  if (open.empty()) return;
  counters_ = open.back().counters;
  if (counters_ != nullptr) wall0_ns_ = wall_ns();
  scope_.emplace(CpuTerm::collective_wait);
}

CpuWaitScope::~CpuWaitScope() {
  scope_.reset();
  if (counters_ != nullptr) counters_->add_wait_wall_ns(wall_ns() - wall0_ns_);
}

CpuContext capture_cpu_context() {
  const auto& open = thread_frames().open;
  if (open.empty()) return {};
  return {open.back().counters, open.back().term};
}

}  // namespace tz
