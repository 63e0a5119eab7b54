// `tierzero trace DIR`: merges the per-rank flight-recorder files a failed (or SIGUSR1'd) run wrote
// into one report (comm/flight_trace.hpp): per group, the highest sequence number each rank
// completed and issued, the first one where the ranks part, and who never arrived there. Files of
// different runs (their run_id differs) are refused, naming each run's files.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "comm/flight_trace.hpp"

namespace tz::cli {
namespace {

std::string rank_list(const std::vector<int>& r) {
  return fmt::format("{{{}}}", fmt::join(r, ","));
}

std::string per_rank(const std::map<int, std::uint64_t>& m) {
  std::vector<std::string> parts;
  for (const auto& [r, v] : m) parts.push_back(fmt::format("{}:{}", r, v));
  return fmt::format("{}", fmt::join(parts, " "));
}

int run_trace(const std::string& dir) {
  const TraceReport rep = merge_flight_records(read_flight_records(dir));
  fmt::print("flight records of {} of {} ranks in {} ({})\n", rep.ranks.size(), rep.world_size, dir,
             rep.run_id.empty() ? "no run id: written before run ids" : "run " + rep.run_id);
  if (!rep.missing.empty()) fmt::print("no record from world rank(s) {}\n", rank_list(rep.missing));
  for (const auto& [r, why] : rep.reasons) fmt::print("  rank {}: {}\n", r, why);
  int parted = 0;
  for (const TraceGroup& g : rep.groups) {
    fmt::print("group '{}' {}: completed {}; issued {}\n", g.label, rank_list(g.members),
               per_rank(g.completed), per_rank(g.issued));
    if (!g.part_seq) continue;
    ++parted;
    std::vector<std::string> ops;
    for (const auto& [r, e] : g.at_part)
      ops.push_back(fmt::format("{}: {} {} x{} ({})", r, e.op, e.dtype, e.count, e.state));
    fmt::print("  parts at seq {}{}: {}\n", *g.part_seq,
               g.disagree ? " (the ranks issued different collectives)" : "", fmt::join(ops, "; "));
    fmt::print("  completed by {}, waiting in it: {}, never arrived: {}\n", rank_list(g.done),
               rank_list(g.waiting), rank_list(g.never_arrived));
  }
  if (parted == 0) fmt::print("no group parted: every rank with a record completed the same collectives\n");
  return 0;
}

const bool trace_registered = register_command(
    {"trace",
     "Merge the flight-recorder files of a run (one per rank) into one report of where the ranks parted",
     [](CLI::App& sub) -> RunFn {
       auto dir = std::make_shared<std::string>();
       OptionSet o(sub, "trace");
       o.text("dir", *dir, "the directory of rank-<r>.json files (train's --flight-recorder)")->required();
       return [dir] { return run_trace(*dir); };
     }});

}  // namespace
}  // namespace tz::cli
