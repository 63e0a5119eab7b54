// Views of the flight recorder and the culprit rule (fault_verdict.hpp).
#include "comm/fault_verdict.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace tz {

RankView make_rank_view(const FlightRecorder& recorder, std::map<int, std::string> peer_states) {
  RankView v;
  v.world_rank = recorder.world_rank();
  v.posted_s = wall_clock_s();
  v.peer_states = std::move(peer_states);
  const nlohmann::json j = recorder.to_json("fault exchange");
  for (const auto& g : j.at("groups")) {
    GroupView gv;
    gv.label = g.at("group").get<std::string>();
    gv.members = g.at("members").get<std::vector<int>>();
    gv.issued = g.at("issued").get<std::uint64_t>();
    gv.completed = gv.issued;
    for (const auto& e : g.at("entries")) {
      const std::string state = e.at("state").get<std::string>();
      if (state == "completed") continue;
      gv.completed = e.at("seq").get<std::uint64_t>() - 1;
      gv.op = e.at("op").get<std::string>();
      gv.waiting = state == "started" || (state == "failed" && e.value("timed_out", false));
      break;
    }
    v.groups.push_back(std::move(gv));
  }
  return v;
}

std::string rank_view_to_string(const RankView& v) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupView& g : v.groups)
    groups.push_back({{"label", g.label},
                      {"members", g.members},
                      {"issued", g.issued},
                      {"completed", g.completed},
                      {"op", g.op},
                      {"waiting", g.waiting}});
  nlohmann::json peers = nlohmann::json::object();
  for (const auto& [r, s] : v.peer_states) peers[std::to_string(r)] = s;
  return nlohmann::json{
      {"world_rank", v.world_rank}, {"posted_s", v.posted_s}, {"groups", groups}, {"peers", peers}}
      .dump();
}

std::optional<RankView> rank_view_from_string(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    RankView v;
    v.world_rank = j.at("world_rank").get<int>();
    v.posted_s = j.at("posted_s").get<double>();
    for (const auto& g : j.at("groups"))
      v.groups.push_back({g.at("label").get<std::string>(), g.at("members").get<std::vector<int>>(),
                          g.at("issued").get<std::uint64_t>(), g.at("completed").get<std::uint64_t>(),
                          g.at("op").get<std::string>(), g.at("waiting").get<bool>()});
    for (const auto& [k, s] : j.at("peers").items()) v.peer_states[std::stoi(k)] = s.get<std::string>();
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

std::string rank_set(const std::set<int>& s) {
  return fmt::format("{{{}}}", fmt::join(s, ","));
}

// A group instance: its label and members (a label alone names a different group on every node).
using GroupKey = std::tuple<std::string, std::vector<int>>;

struct StuckPoint {
  std::string op;
  std::set<int> waiting, missing;
};

}  // namespace

FaultVerdict agree_culprit(const std::vector<std::optional<RankView>>& views, double deadline_s) {
  const int n = static_cast<int>(views.size());
  std::set<int> silent, lost, stopped;
  for (int r = 0; r < n; ++r) {
    if (!views[r] || views[r]->world_rank != r) silent.insert(r);
    if (!views[r]) continue;
    for (const auto& [peer, state] : views[r]->peer_states) {
      if (state == "gone") lost.insert(peer);
      if (state == "stopped") stopped.insert(peer);
    }
  }
  for (int r : lost) silent.insert(r);

  // (group, member) -> that member's view of the group; then the stuck points.
  std::map<GroupKey, std::map<int, const GroupView*>> by_group;
  for (int r = 0; r < n; ++r)
    if (views[r] && !silent.count(r))
      for (const GroupView& g : views[r]->groups) by_group[{g.label, g.members}][r] = &g;
  std::map<std::tuple<GroupKey, std::uint64_t>, StuckPoint> stuck;
  std::set<int> waiting_anywhere;
  for (const auto& [key, members] : by_group)
    for (const auto& [r, g] : members) {
      if (!g->waiting) continue;
      waiting_anywhere.insert(r);
      StuckPoint& p = stuck[{key, g->completed + 1}];
      p.op = g->op;
      p.waiting.insert(r);
    }
  for (auto& [at, p] : stuck) {
    const auto& [key, seq] = at;
    for (int m : std::get<1>(key)) {
      auto it = by_group.at(key).find(m);
      if (silent.count(m) || it == by_group.at(key).end() || it->second->issued < seq) p.missing.insert(m);
    }
  }

  std::set<int> culprits;
  std::string why;
  if (!silent.empty()) {
    culprits = silent;
    std::vector<std::string> parts;
    std::set<int> gone, quiet;
    for (int r : silent) (lost.count(r) ? gone : quiet).insert(r);
    if (!gone.empty()) parts.push_back(fmt::format("world rank(s) {} lost (process gone)", rank_set(gone)));
    if (!quiet.empty()) {
      std::string s = fmt::format("world rank(s) {} did not answer the fault exchange within {} s",
                                  rank_set(quiet), deadline_s);
      std::set<int> st;
      for (int r : quiet)
        if (stopped.count(r)) st.insert(r);
      if (!st.empty()) s += fmt::format(" (process of {} stopped)", rank_set(st));
      parts.push_back(s);
    }
    why = fmt::format("{}", fmt::join(parts, "; "));
  } else {
    for (const auto& [at, p] : stuck)
      for (int m : p.missing)
        if (!waiting_anywhere.count(m)) culprits.insert(m);
    if (!culprits.empty()) {
      why = fmt::format("world rank(s) {} alive but not in the collective the others wait in",
                        rank_set(culprits));
    } else {
      for (const auto& [at, p] : stuck) culprits.insert(p.missing.begin(), p.missing.end());
      why = culprits.empty() ? std::string("no rank is missing from any collective")
                             : fmt::format(
                                   "desync: world rank(s) {} each wait in a collective another has not "
                                   "issued",
                                   rank_set(culprits));
    }
  }

  std::string line = fmt::format("culprit world rank(s) {}: {}", rank_set(culprits), why);
  // The stuck points the culprits are missing from, first by group then sequence (at most 4).
  int shown = 0;
  for (const auto& [at, p] : stuck) {
    std::set<int> blame;
    for (int m : p.missing)
      if (culprits.count(m)) blame.insert(m);
    if (blame.empty()) continue;
    if (++shown > 4) {
      line += "; ...";
      break;
    }
    const auto& [key, seq] = at;
    line += fmt::format("; {} seq {} on group '{}' {} waits for {} (waiting: {})", p.op, seq,
                        std::get<0>(key), rank_set({std::get<1>(key).begin(), std::get<1>(key).end()}),
                        rank_set(blame), rank_set(p.waiting));
  }
  // Where every rank was: its first unfinished collective on the world-spanning group it waits in.
  std::vector<std::string> where;
  for (int r = 0; r < n; ++r) {
    if (silent.count(r)) {
      where.push_back(fmt::format("{}: ?", r));
      continue;
    }
    std::string at = "idle";
    for (const GroupView& g : views[r]->groups)
      if (!g.op.empty() && g.waiting) {
        at = fmt::format("{} seq {} on '{}'", g.op, g.completed + 1, g.label);
        break;
      }
    where.push_back(fmt::format("{}: {}", r, at));
  }
  line += fmt::format("; ranks were in: {}", fmt::join(where, ", "));
  return {{culprits.begin(), culprits.end()}, line};
}

std::string name_culprit_hosts(const FaultVerdict& verdict, const std::vector<std::string>& hosts) {
  if (verdict.culprits.empty() || hosts.empty()) return verdict.line;
  const int n = static_cast<int>(hosts.size());
  std::map<std::string, std::set<int>> culprits_on, ranks_on;
  for (int r = 0; r < n; ++r) ranks_on[hosts[r]].insert(r);
  for (int r : verdict.culprits) {
    if (r < 0 || r >= n) return verdict.line;
    culprits_on[hosts[r]].insert(r);
  }
  std::vector<std::string> parts;
  for (const auto& [host, ranks] : culprits_on)
    parts.push_back(ranks == ranks_on[host] ? fmt::format("host {}: all its ranks {}", host, rank_set(ranks))
                                            : fmt::format("host {}: {} of its ranks {}", host,
                                                          rank_set(ranks), rank_set(ranks_on[host])));
  const std::string head =
      fmt::format("culprit world rank(s) {}", rank_set({verdict.culprits.begin(), verdict.culprits.end()}));
  if (verdict.line.rfind(head, 0) != 0) return verdict.line;
  return fmt::format("{} ({}){}", head, fmt::join(parts, "; "), verdict.line.substr(head.size()));
}

}  // namespace tz
