// The per-collective context (collective.hpp): deadline-bounded waits with a report on timeout.
#include "comm/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace tz {

std::byte* Workspace::get(int slot, std::size_t bytes) {
  if (slots_.size() <= static_cast<std::size_t>(slot)) slots_.resize(slot + 1);
  auto& buf = slots_[slot];
  if (buf.size() < bytes) {
    buf.clear();
    buf.shrink_to_fit();
    buf.resize(bytes);
  }
  return buf.data();
}

Collective::Collective(Transport& transport, Workspace& workspace, std::string_view op,
                       const std::string& group, std::uint64_t seq, double timeout_s, std::size_t chunk_bytes)
    : transport_(transport),
      workspace_(workspace),
      op_(op),
      group_(group),
      seq_(seq),
      timeout_s_(timeout_s),
      deadline_(Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s))),
      chunk_bytes_(std::max<std::size_t>(chunk_bytes, 1)) {}

std::string Collective::describe() const {
  return fmt::format("{} on group '{}' (seq {}, rank {} of {}, world rank {})", op_, group_, seq_, rank(),
                     size(), transport_.world_rank(rank()));
}

void Collective::fail(const std::string& what) const {
  throw CommError(describe() + ": " + what);
}

void Collective::fail_timeout(const std::string& what) const {
  throw CommTimeout(describe() + ": " + what);
}

void Collective::wait(std::span<Request> requests) {
  bool all_done = false;
  try {
    all_done = transport_.wait_all(requests, deadline_);
  } catch (const CommError& e) {  // a size mismatch or an aborted world: name the collective
    transport_.cancel(requests);
    fail(e.what());
  }
  if (all_done) return;
  std::set<int> from, to;
  for (const Request& r : requests) {
    if (!r.pending()) continue;
    (r.is_send ? to : from).insert(transport_.world_rank(r.peer));
  }
  transport_.cancel(requests);
  std::string what = fmt::format("timed out after {} s; not arrived: world rank(s) {{{}}}", timeout_s_,
                                 fmt::join(from, ","));
  if (!to.empty()) what += fmt::format("; sends not taken by world rank(s) {{{}}}", fmt::join(to, ","));
  fail_timeout(what);
}

void Collective::fail_not_arrived(std::span<const int> behind) const {
  std::set<int> from;
  for (int q : behind) from.insert(transport_.world_rank(q));
  fail_timeout(fmt::format("timed out after {} s; not arrived: world rank(s) {{{}}}", timeout_s_,
                           fmt::join(from, ",")));
}

Chunks::Chunks(std::size_t total_bytes, std::size_t chunk_bytes)
    : bytes(total_bytes),
      chunk(std::max<std::size_t>(chunk_bytes, 1)),
      count(total_bytes == 0 ? 1 : (total_bytes + chunk - 1) / chunk) {}

}  // namespace tz
