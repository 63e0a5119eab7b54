// `tierzero trace DIR`: the per-rank flight-recorder files (comm/flight_recorder.hpp) merged into one
// picture of where the ranks parted (docs/faults.md).
//
// For every group (a label and its members' world ranks, as the files name it):
//  - the highest sequence number each member completed, and the highest it issued;
//  - the first sequence number where the members part: the first one (among those every member's
//    ring still holds, or that a member never reached) that some member has not completed, or at
//    which the members' entries disagree on (op, dtype, count);
//  - at that point, who completed it, who was waiting in it, and who never arrived (never issued it);
//  - members with no file at all (a rank that died before it could write one).
//
// The files must be of one run: every rank of a run writes the same run_id, and a directory that
// two runs wrote into (one run's rank-1.json beside another's rank-0.json) is refused with the files
// of each run. Files of a tierzero before run ids (version 1, no run_id) merge only with each other.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tz {

struct TraceEntry {
  std::string op, dtype, state;
  std::uint64_t count = 0;
};

struct TraceGroup {
  std::string label;
  std::vector<int> members;
  std::map<int, std::uint64_t> completed, issued;  // by member with a file
  std::vector<int> no_file;                        // members without a file
  // The first point where they part (unset: every member with a file completed the same ops).
  std::optional<std::uint64_t> part_seq;
  std::map<int, TraceEntry> at_part;  // each member's entry there (absent: never arrived)
  bool disagree = false;              // the entries there differ in op, dtype or count
  std::vector<int> done, waiting, never_arrived;
};

struct TraceReport {
  std::string run_id;  // "" for files written before run ids
  int world_size = 0;
  std::vector<int> ranks;              // ranks with a file
  std::vector<int> missing;            // ranks of the world without one
  std::map<int, std::string> reasons;  // why each rank wrote its file
  std::vector<TraceGroup> groups;
};

// Reads every rank-<r>.json of `dir` (InputError naming the directory or file when it holds none, or
// one is not a flight record).
std::vector<nlohmann::json> read_flight_records(const std::string& dir);
// InputError naming the files of each run when the records are of more than one.
TraceReport merge_flight_records(const std::vector<nlohmann::json>& records);

}  // namespace tz
