// Merging flight records (flight_trace.hpp).
#include "comm/flight_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_read.hpp"

namespace tz {

std::vector<nlohmann::json> read_flight_records(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) fail_input("trace: {} is not a directory", dir);
  const std::regex name("rank-[0-9]+\\.json");
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file() && std::regex_match(e.path().filename().string(), name))
      paths.push_back(e.path().string());
  if (ec) fail_input("trace: cannot list {}: {}", dir, ec.message());
  if (paths.empty()) fail_input("trace: {} holds no flight records (rank-<r>.json)", dir);
  std::sort(paths.begin(), paths.end());
  std::vector<nlohmann::json> out;
  for (const std::string& p : paths) {
    nlohmann::json j = read_json_file(p, "flight record");
    if (!j.is_object() || j.value("format", "") != "tierzero-flight-recorder")
      fail_input(
          "flight record {}: not a tierzero flight record (no \"format\": \"tierzero-flight-recorder\")", p);
    j["_file"] = p;
    out.push_back(std::move(j));
  }
  return out;
}

namespace {

using GroupKey = std::tuple<std::string, std::vector<int>>;

struct MemberRecord {
  std::uint64_t issued = 0;
  std::map<std::uint64_t, TraceEntry> entries;
};

// The run id of a record: "" when it has none (written before run ids).
std::string run_id_of(const nlohmann::json& rec, const std::string& file) {
  if (!rec.contains("run_id")) return "";
  const nlohmann::json& id = rec["run_id"];
  const auto printable = [](const std::string& s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    });
  };
  if (!id.is_string() || !printable(id.get<std::string>()))
    fail_input("flight record {}: key 'run_id' must be 1 to 64 letters, digits, '-' or '_', got {}", file,
               json_excerpt(id));
  return id.get<std::string>();
}

// Refuses records of more than one run, naming each run with its files (and their pids and dump
// times, which tell the runs apart when the ids do not say enough to a reader).
std::string the_one_run(const std::vector<nlohmann::json>& records) {
  std::map<std::string, std::vector<std::string>> files;  // by run id
  for (const nlohmann::json& rec : records) {
    if (!rec.is_object()) fail_input("flight record: expected a JSON object, got {}", json_excerpt(rec));
    const std::string file = rec.value("_file", std::string("(memory)"));
    const nlohmann::json pid = rec.value("pid", nlohmann::json()),
                         at = rec.value("dumped_at_s", nlohmann::json());
    files[run_id_of(rec, file)].push_back(fmt::format(
        "{} (pid {}, dumped at {})", std::filesystem::path(file).filename().string(), json_excerpt(pid, 24),
        at.is_number() ? fmt::format("{:.3f} s", at.get<double>()) : json_excerpt(at, 24)));
  }
  if (files.size() <= 1) return files.empty() ? "" : files.begin()->first;
  std::string runs;
  for (const auto& [id, of_run] : files)
    runs += fmt::format("; {}: {}", id.empty() ? "no run id (written before run ids)" : "run " + id,
                        fmt::join(of_run, ", "));
  const std::string dir =
      std::filesystem::path(records.front().value("_file", std::string())).parent_path().string();
  fail_input(
      "trace: {}the flight records are of {} different runs (their run_id differs){}; trace one run at a "
      "time: move the other runs' files to a directory of their own",
      dir.empty() ? "" : dir + ": ", files.size(), runs);
}

}  // namespace

TraceReport merge_flight_records(const std::vector<nlohmann::json>& records) {
  TraceReport rep;
  rep.run_id = the_one_run(records);
  std::map<GroupKey, std::map<int, MemberRecord>> groups;
  std::set<int> ranks;
  for (const nlohmann::json& rec : records) {
    const std::string file = rec.value("_file", std::string("(memory)"));
    try {
      const int r = rec.at("world_rank").get<int>();
      const int n = rec.at("world_size").get<int>();
      if (r < 0 || n < 1 || r >= n) fail_input("flight record {}: world rank {} of {}", file, r, n);
      if (rep.world_size != 0 && rep.world_size != n)
        fail_input("flight record {}: world size {}, another file says {}", file, n, rep.world_size);
      rep.world_size = n;
      if (!ranks.insert(r).second) fail_input("flight record {}: a second file for world rank {}", file, r);
      rep.reasons[r] = rec.value("reason", std::string());
      for (const auto& g : rec.at("groups")) {
        MemberRecord m;
        m.issued = g.at("issued").get<std::uint64_t>();
        for (const auto& e : g.at("entries"))
          m.entries[e.at("seq").get<std::uint64_t>()] = {
              e.at("op").get<std::string>(), e.at("dtype").get<std::string>(),
              e.at("state").get<std::string>(), e.at("count").get<std::uint64_t>()};
        groups[{g.at("group").get<std::string>(), g.at("members").get<std::vector<int>>()}][r] = std::move(m);
      }
    } catch (const nlohmann::json::exception& e) {
      fail_input("flight record {}: {}", file, e.what());
    }
  }
  rep.ranks.assign(ranks.begin(), ranks.end());
  for (int r = 0; r < rep.world_size; ++r)
    if (!ranks.count(r)) rep.missing.push_back(r);

  for (const auto& [key, by_member] : groups) {
    TraceGroup tg;
    tg.label = std::get<0>(key);
    tg.members = std::get<1>(key);
    std::uint64_t lowest = 1, highest = 0;  // the seqs every member's ring still holds start at `lowest`
    for (const auto& [r, m] : by_member) {
      tg.issued[r] = m.issued;
      std::uint64_t done = m.entries.empty() ? m.issued : m.entries.begin()->first - 1;
      for (const auto& [seq, e] : m.entries) {
        if (e.state != "completed") break;
        done = seq;
      }
      tg.completed[r] = done;
      if (!m.entries.empty()) lowest = std::max(lowest, m.entries.begin()->first);
      highest = std::max(highest, m.issued);
    }
    for (int member : tg.members)
      if (!by_member.count(member)) tg.no_file.push_back(member);
    for (std::uint64_t seq = lowest; seq <= highest && !tg.part_seq; ++seq) {
      std::map<int, TraceEntry> at;
      bool all_done = true, differ = false;
      const TraceEntry* first = nullptr;
      for (const auto& [r, m] : by_member) {
        auto it = m.entries.find(seq);
        if (it == m.entries.end()) {
          if (seq > m.issued) all_done = false;  // never issued it
          continue;
        }
        at[r] = it->second;
        if (it->second.state != "completed") all_done = false;
        if (!first)
          first = &it->second;
        else if (first->op != it->second.op || first->dtype != it->second.dtype ||
                 first->count != it->second.count)
          differ = true;
      }
      if (all_done && !differ) continue;  // members without a file are listed on their own
      tg.part_seq = seq;
      tg.disagree = differ;
      tg.at_part = at;
      for (const auto& [r, m] : by_member) {
        auto it = at.find(r);
        if (it == at.end()) {
          if (seq > m.issued) tg.never_arrived.push_back(r);
        } else if (it->second.state == "completed") {
          tg.done.push_back(r);
        } else {
          tg.waiting.push_back(r);
        }
      }
      for (int r : tg.no_file) tg.never_arrived.push_back(r);
      std::sort(tg.never_arrived.begin(), tg.never_arrived.end());
    }
    rep.groups.push_back(std::move(tg));
  }
  return rep;
}

}  // namespace tz
