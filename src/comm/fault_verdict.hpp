// Blame for a stuck job, computed the same way on every live rank (docs/faults.md).
//
// Terms. A rank's *view* is what its flight recorder says of each group it belongs to: the last
// sequence number issued and the last completed, and the first unfinished collective (its op, and
// whether the rank is *waiting* in it: started, or failed by a timeout). A *stuck point* is a
// (group, seq) in which some member waits. Its *missing* members are those that did not answer the
// fault exchange, or answered with fewer than seq collectives issued on that group.
//
// Culprits, in order:
//  1. ranks known lost (their process is gone) or that did not answer the exchange by its deadline
//     (stopped, or dead on another host);
//  2. else the missing ranks of some stuck point that wait nowhere themselves (alive, but they never
//     issued the collective: a skipped collective, a diverging code path, a slow rank);
//  3. else every missing rank: each waits for another in a different collective (a desync).
// The verdict is a pure function of the set of views, so ranks that received the same views print
// the same line, word for word.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm/flight_recorder.hpp"

namespace tz {

struct GroupView {
  std::string label;
  std::vector<int> members;  // world ranks
  std::uint64_t issued = 0, completed = 0;
  std::string op;  // the first unfinished collective ("" = none)
  bool waiting = false;
};

struct RankView {
  int world_rank = -1;
  double posted_s = 0;  // wall clock when it was posted (a rank that answers later than the poster's
                        // deadline knows it was not heard: it was stopped)
  std::vector<GroupView> groups;
  // What this rank saw of its peers' processes (same host only): world rank -> "gone" | "stopped".
  std::map<int, std::string> peer_states;
};

RankView make_rank_view(const FlightRecorder& recorder, std::map<int, std::string> peer_states = {});
std::string rank_view_to_string(const RankView& view);
// Parses what rank_view_to_string wrote; nullopt when it is not a view (a corrupt message).
std::optional<RankView> rank_view_from_string(const std::string& text);

struct FaultVerdict {
  std::vector<int> culprits;  // world ranks
  std::string line;           // the report every live rank prints
};

// `views[r]` is world rank r's view, or nullopt when it did not answer within `deadline_s`.
FaultVerdict agree_culprit(const std::vector<std::optional<RankView>>& views, double deadline_s);

// The verdict's line with the hosts of its culprits inserted after the culprit set, e.g.
// "culprit world rank(s) {4,5} (host h3: all its ranks {4,5}): ..."; `hosts[r]` is world rank r's
// host. The line unchanged when the hosts are not known (empty, or not one per rank).
std::string name_culprit_hosts(const FaultVerdict& verdict, const std::vector<std::string>& hosts);

}  // namespace tz
