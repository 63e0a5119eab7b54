// Flight recorder rings and their JSON (flight_recorder.hpp).
#include "comm/flight_recorder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.hpp"

namespace tz {

std::string_view flight_state_name(FlightState s) {
  switch (s) {
    case FlightState::issued:
      return "issued";
    case FlightState::started:
      return "started";
    case FlightState::completed:
      return "completed";
    case FlightState::failed:
      return "failed";
  }
  return "?";
}

double wall_clock_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

FlightRing::FlightRing(std::string label, std::vector<int> members, int rank, std::size_t capacity)
    : label_(std::move(label)),
      members_(std::move(members)),
      rank_(rank),
      capacity_(std::max<std::size_t>(capacity, 1)) {}

void FlightRing::issue(std::uint64_t seq, std::string_view op, DType dtype, std::uint64_t count,
                       std::uint64_t bytes) {
  FlightEntry e;
  e.seq = seq;
  e.op = std::string(op);
  e.dtype = dtype;
  e.count = count;
  e.bytes = bytes;
  e.issued_s = wall_clock_s();
  std::lock_guard lock(mu_);
  issued_ = std::max(issued_, seq);
  ring_.push_back(std::move(e));
  if (ring_.size() > capacity_) ring_.pop_front();
}

FlightEntry* FlightRing::find(std::uint64_t seq) {
  // Entries are issued in sequence order, so the ring is sorted by seq (with no gaps).
  if (ring_.empty() || seq < ring_.front().seq || seq > ring_.back().seq) return nullptr;
  FlightEntry& e = ring_[seq - ring_.front().seq];
  return e.seq == seq ? &e : nullptr;
}

void FlightRing::start(std::uint64_t seq, std::string_view algorithm) {
  std::lock_guard lock(mu_);
  if (FlightEntry* e = find(seq)) {
    e->algorithm = std::string(algorithm);
    e->started_s = wall_clock_s();
    e->state = FlightState::started;
  }
}

void FlightRing::finish(std::uint64_t seq, const std::string& error, bool timed_out) {
  std::lock_guard lock(mu_);
  if (FlightEntry* e = find(seq)) {
    e->ended_s = wall_clock_s();
    e->state = error.empty() ? FlightState::completed : FlightState::failed;
    e->error = error;
    e->timed_out = timed_out;
  }
}

std::vector<FlightEntry> FlightRing::entries() const {
  std::lock_guard lock(mu_);
  return {ring_.begin(), ring_.end()};
}

std::uint64_t FlightRing::issued() const {
  std::lock_guard lock(mu_);
  return issued_;
}

nlohmann::json FlightRing::to_json() const {
  nlohmann::json entries = nlohmann::json::array();
  std::uint64_t issued = 0;
  {
    std::lock_guard lock(mu_);
    issued = issued_;
    for (const FlightEntry& e : ring_) {
      nlohmann::json j = {{"seq", e.seq},
                          {"op", e.op},
                          {"algorithm", e.algorithm},
                          {"dtype", std::string(dtype_name(e.dtype))},
                          {"count", e.count},
                          {"bytes", e.bytes},
                          {"issued_s", e.issued_s},
                          {"started_s", e.started_s},
                          {"ended_s", e.ended_s},
                          {"state", std::string(flight_state_name(e.state))}};
      if (!e.error.empty()) j["error"] = e.error;
      if (e.timed_out) j["timed_out"] = true;
      entries.push_back(std::move(j));
    }
  }
  return {
      {"group", label_}, {"members", members_}, {"rank", rank_}, {"issued", issued}, {"entries", entries}};
}

std::string new_flight_run_id() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  // The clock and the pid as well: a random_device that is a fixed-seed engine still differs per run.
  const std::uint64_t id = ((std::uint64_t{rd()} << 32) | rd()) ^ now ^ (std::uint64_t(getpid()) << 40);
  return fmt::format("{:016x}", id);
}

FlightRecorder::FlightRecorder(int world_rank, int world_size, std::string run_id, std::size_t capacity)
    : world_rank_(world_rank), world_size_(world_size), run_id_(std::move(run_id)), capacity_(capacity) {}

std::shared_ptr<FlightRing> FlightRecorder::add_ring(std::string label, std::vector<int> members, int rank) {
  auto ring = std::make_shared<FlightRing>(std::move(label), std::move(members), rank, capacity_);
  std::lock_guard lock(mu_);
  rings_.push_back(ring);
  return ring;
}

void FlightRecorder::set_on_timeout(TimeoutHook hook) {
  std::lock_guard lock(mu_);
  on_timeout_ = std::move(hook);
}

std::string FlightRecorder::on_timeout(const std::string& report) {
  TimeoutHook hook;
  {
    std::lock_guard lock(mu_);
    hook = on_timeout_;
  }
  return hook ? hook(report) : std::string();
}

nlohmann::json FlightRecorder::to_json(const std::string& reason) const {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "?");
  std::vector<std::shared_ptr<FlightRing>> rings;
  {
    std::lock_guard lock(mu_);
    rings = rings_;
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& r : rings) groups.push_back(r->to_json());
  return {{"format", "tierzero-flight-recorder"},
          {"version", 2},
          {"run_id", run_id_},
          {"world_rank", world_rank_},
          {"world_size", world_size_},
          {"pid", static_cast<long>(getpid())},
          {"host", std::string(host)},
          {"reason", reason},
          {"dumped_at_s", wall_clock_s()},
          {"capacity", capacity_},
          {"groups", groups}};
}

void FlightRecorder::dump(const std::string& path, const std::string& reason) const {
  const std::string text = to_json(reason).dump(1) + "\n";
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      fail_input("flight recorder: cannot create directory {} for rank {}: {}", p.parent_path().string(),
                 world_rank_, ec.message());
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    fail_input("flight recorder: cannot write {} (rank {}): {}", tmp, world_rank_, std::strerror(errno));
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    std::remove(tmp.c_str());
    fail_input("flight recorder: writing {} (rank {}) failed: {}", tmp, world_rank_,
               std::strerror(wrote ? errno : write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    fail_input("flight recorder: cannot rename {} to {} (rank {}): {}", tmp, path, world_rank_,
               std::strerror(e));
  }
}

std::string flight_record_path(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / fmt::format("rank-{}.json", rank)).string();
}

}  // namespace tz
