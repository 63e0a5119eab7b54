// The flight recorder: what each communicator of a rank did last, kept so that a failure can be
// explained after the fact (PyTorch's NCCL flight recorder, in tierzero's terms). Every communicator
// owns a bounded ring of its last `capacity` collectives; one FlightRecorder per rank holds the rings
// of all its communicators (a split shares its parent's recorder, as it shares the ledger).
//
// An entry: the sequence number on its communicator, the op, the algorithm that ran it, dtype, count
// and payload bytes, wall-clock times (issued by the caller, started on the progress thread, ended),
// and the state: issued (queued behind earlier collectives), started (exchanging with peers: a rank
// stuck here is waiting for someone), completed or failed (with the error). Times are wall-clock
// seconds since the epoch, so the files of several ranks (and hosts) can be laid side by side.
//
// to_json writes the format `tierzero trace` reads (docs/faults.md): one object per rank with one
// group per communicator, named by its label (the tier set) and its members' world ranks, because a
// label alone ("node") names a different group on every node. Thread-safe: the issuing thread and
// the progress thread record while a dumper (timeout, signal) reads.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace tz {

enum class FlightState : std::uint8_t { issued, started, completed, failed };
std::string_view flight_state_name(FlightState s);

struct FlightEntry {
  std::uint64_t seq = 0;
  std::string op;         // "all_gather", ..., "split"
  std::string algorithm;  // "ring", "shared", "pairwise", "binomial", "dissemination", "split_keys"
  DType dtype = DType::u8;
  std::uint64_t count = 0;                          // elements of dtype per rank, as the caller passed it
  std::uint64_t bytes = 0;                          // payload bytes (the gathered / unreduced tensor)
  double issued_s = 0, started_s = 0, ended_s = 0;  // wall clock; 0 = not yet
  FlightState state = FlightState::issued;
  std::string error;       // failed: the report
  bool timed_out = false;  // failed waiting for peers (not: failed after an earlier failure)
};

// The ring of one communicator.
class FlightRing {
 public:
  FlightRing(std::string label, std::vector<int> members, int rank, std::size_t capacity);

  const std::string& label() const { return label_; }
  const std::vector<int>& members() const { return members_; }  // world rank of each group rank

  void issue(std::uint64_t seq, std::string_view op, DType dtype, std::uint64_t count, std::uint64_t bytes);
  void start(std::uint64_t seq, std::string_view algorithm);
  void finish(std::uint64_t seq, const std::string& error, bool timed_out = false);  // "": completed

  // The entries still in the ring, oldest first, and the number of collectives ever issued.
  std::vector<FlightEntry> entries() const;
  std::uint64_t issued() const;
  nlohmann::json to_json() const;

 private:
  FlightEntry* find(std::uint64_t seq);  // null once it has left the ring

  const std::string label_;
  const std::vector<int> members_;
  const int rank_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<FlightEntry> ring_;
  std::uint64_t issued_ = 0;
};

// Wall-clock seconds since the epoch (the recorder's clock).
double wall_clock_s();

// A fresh run id: 16 hex digits from the system's random source and the clock. Every rank of one run
// must hold the same id, so one rank draws it and the world hands it to the others
// (comm/thread_world.cpp, comm/transport/mpi_world.cpp); `tierzero trace` refuses files of
// different runs, which a shared directory otherwise mixes.
std::string new_flight_run_id();

class FlightRecorder {
 public:
  static constexpr std::size_t kDefaultCapacity = 1024;

  FlightRecorder(int world_rank, int world_size, std::string run_id, std::size_t capacity = kDefaultCapacity);

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  const std::string& run_id() const { return run_id_; }
  std::size_t capacity() const { return capacity_; }

  // A new ring for a communicator (kept until the recorder goes: a dump shows groups already freed).
  std::shared_ptr<FlightRing> add_ring(std::string label, std::vector<int> members, int rank);

  // Called (on the failing progress thread) when a collective of this rank times out, with its
  // report; returns what the hook adds to it (the agreed culprit, comm/fault_agreement.hpp), or "".
  // Set before the rank communicates.
  using TimeoutHook = std::function<std::string(const std::string& report)>;
  void set_on_timeout(TimeoutHook hook);
  std::string on_timeout(const std::string& report);

  // The rank's record: {format, version, run_id, world_rank, world_size, pid, host, reason, dumped_at_s,
  // capacity, groups: [{group, members, rank, issued, entries: [...]}]}. Version 1 had no run_id.
  nlohmann::json to_json(const std::string& reason) const;

  // Writes to_json(reason) to `path` (through a temporary file and a rename, every write checked);
  // throws InputError naming the file when it cannot.
  void dump(const std::string& path, const std::string& reason) const;

 private:
  const int world_rank_, world_size_;
  const std::string run_id_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<FlightRing>> rings_;
  TimeoutHook on_timeout_;
};

// The file of world rank `rank` in a flight-recorder directory: DIR/rank-<r>.json.
std::string flight_record_path(const std::string& dir, int rank);

}  // namespace tz
