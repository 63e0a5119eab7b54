#include "topology/topology.hpp"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {

const std::vector<std::pair<std::string_view, std::string_view>>& embedded_topology_presets();

namespace {

Tier parse_tier(const nlohmann::json& doc, const std::string& where, bool outermost, bool* auto_fanout) {
  JsonFields f(doc, where);
  f.allow_only({"name", "fanout", "bandwidth_gbps", "latency_us", "reduce_gbps", "source", "note"});
  Tier t;
  t.name = f.str("name");
  if (t.name.empty()) f.fail("name", "must not be empty");
  const auto& fan = f.raw("fanout");
  if (fan.is_string() && fan.get<std::string>() == "auto") {
    if (!outermost) f.fail("fanout", "may be \"auto\" only on the outermost tier");
    *auto_fanout = true;
    t.fanout = 1;
  } else {
    if (!fan.is_number_integer())
      f.fail("fanout", fmt::format("must be a positive integer or \"auto\", got {}", fan.dump()));
    long long v = fan.get<long long>();
    if (v < 1 || v > (1 << 20)) f.fail("fanout", fmt::format("must be a positive integer, got {}", v));
    t.fanout = static_cast<int>(v);
  }
  t.bandwidth_gbps = f.number("bandwidth_gbps");
  if (!(t.bandwidth_gbps > 0)) f.fail("bandwidth_gbps", fmt::format("must be > 0, got {}", t.bandwidth_gbps));
  t.latency_us = f.number("latency_us");
  if (!(t.latency_us >= 0)) f.fail("latency_us", fmt::format("must be >= 0, got {}", t.latency_us));
  t.reduce_gbps = f.number_or("reduce_gbps", 0);
  if (!(t.reduce_gbps >= 0)) f.fail("reduce_gbps", fmt::format("must be >= 0, got {}", t.reduce_gbps));
  t.source = f.str_or("source", "");
  return t;
}

DeviceSpec parse_device(const nlohmann::json& doc, const std::string& where) {
  JsonFields f(doc, where);
  f.allow_only({"name", "peak_tflops", "memory_gib", "memory_bandwidth_gbps", "source", "note"});
  DeviceSpec d;
  d.name = f.str_or("name", "");
  d.peak_tflops = f.number_or("peak_tflops", 0);
  d.memory_gib = f.number_or("memory_gib", 0);
  d.memory_bandwidth_gbps = f.number_or("memory_bandwidth_gbps", 0);
  d.source = f.str_or("source", "");
  for (auto [key, v] : {std::pair{"peak_tflops", d.peak_tflops},
                        {"memory_gib", d.memory_gib},
                        {"memory_bandwidth_gbps", d.memory_bandwidth_gbps}}) {
    if (v < 0) f.fail(key, fmt::format("must be >= 0, got {}", v));
  }
  return d;
}

}  // namespace

Topology Topology::from_json(const nlohmann::json& doc, std::string_view origin) {
  const std::string where = fmt::format("topology {}", origin);
  JsonFields f(doc, where);
  f.allow_only({"name", "description", "tiers", "host_tier", "device", "sources", "note"});
  Topology topo;
  topo.name_ = f.str_or("name", std::string(origin));
  topo.description_ = f.str_or("description", "");
  const auto& tiers = f.raw("tiers");
  if (!tiers.is_array() || tiers.empty()) f.fail("tiers", "must be a non-empty array of tier objects");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    bool is_auto = false;
    topo.tiers_.push_back(
        parse_tier(tiers[i], fmt::format("{}: tiers[{}]", where, i), i + 1 == tiers.size(), &is_auto));
    topo.auto_outer_ = topo.auto_outer_ || is_auto;
  }
  for (std::size_t i = 0; i < topo.tiers_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (topo.tiers_[i].name == topo.tiers_[j].name)
        fail_input("{}: tiers[{}]: duplicate tier name '{}'", where, i, topo.tiers_[i].name);
  if (topo.tiers_.size() > 16) f.fail("tiers", "has more than 16 tiers");
  if (f.has("host_tier")) {
    std::string host = f.str("host_tier");
    topo.host_tier_ = -1;
    for (int t = 0; t < topo.num_tiers(); ++t)
      if (topo.tiers_[t].name == host) topo.host_tier_ = t;
    if (topo.host_tier_ < 0) f.fail("host_tier", fmt::format("names unknown tier '{}'", host));
  }
  if (f.has("device")) topo.device_ = parse_device(f.raw("device"), where + ": device");
  return topo;
}

std::vector<std::string> Topology::preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_topology_presets()) names.emplace_back(name);
  return names;
}

Topology Topology::load(std::string_view preset_or_path) {
  for (const auto& [name, text] : embedded_topology_presets()) {
    if (name == preset_or_path) return from_json(nlohmann::json::parse(text), name);
  }
  const std::string path(preset_or_path);
  if (std::filesystem::exists(path)) return from_json(read_json_file(path), path);
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  fail_input("topology '{}': not a preset ({}) and no such file", preset_or_path, known);
}

Topology Topology::resolve(int world_size) const {
  if (world_size < 1) fail_input("topology {}: world size must be >= 1, got {}", name_, world_size);
  Topology out = *this;
  int inner = 1;
  for (int t = 0; t + 1 < num_tiers(); ++t) inner *= tiers_[t].fanout;
  if (auto_outer_) {
    if (world_size % inner != 0)
      fail_input(
          "topology {}: {} ranks is not a multiple of {} (the product of the fan-outs below tier '{}')",
          name_, world_size, inner, tiers_.back().name);
    out.tiers_.back().fanout = world_size / inner;
    out.auto_outer_ = false;
  }
  if (out.world_size() != world_size) {
    std::string fans;
    for (const auto& t : out.tiers_)
      fans += fmt::format("{}{}={}", fans.empty() ? "" : " x ", t.name, t.fanout);
    fail_input("topology {}: fan-outs {} multiply to {} ranks, but the world has {}", name_, fans,
               out.world_size(), world_size);
  }
  return out;
}

Topology Topology::resolve_outer(int outer_fanout) const {
  if (outer_fanout < 1) fail_input("topology {}: outer fan-out must be >= 1, got {}", name_, outer_fanout);
  int inner = 1;
  for (int t = 0; t + 1 < num_tiers(); ++t) inner *= tiers_[t].fanout;
  if (!auto_outer_ && tiers_.back().fanout != outer_fanout)
    fail_input("topology {}: tier '{}' has fan-out {}, not {}", name_, tiers_.back().name,
               tiers_.back().fanout, outer_fanout);
  return resolve(inner * outer_fanout);
}

const Tier& Topology::tier(int t) const {
  TZ_CHECK(t >= 0 && t < num_tiers(), "tier {} of {}", t, num_tiers());
  return tiers_[t];
}

int Topology::tier_index(std::string_view name) const {
  std::string known;
  for (int t = 0; t < num_tiers(); ++t) {
    if (tiers_[t].name == name) return t;
    known += (known.empty() ? "" : ", ") + tiers_[t].name;
  }
  fail_input("topology {}: no tier named '{}' (tiers: {})", name_, name, known);
}

int Topology::world_size() const {
  int n = 1;
  for (const auto& t : tiers_) n *= t.fanout;
  return n;
}

std::vector<int> Topology::coords(int rank) const {
  TZ_CHECK(rank >= 0 && rank < world_size(), "rank {} of {}", rank, world_size());
  std::vector<int> c(tiers_.size());
  for (std::size_t t = 0; t < tiers_.size(); ++t) {
    c[t] = rank % tiers_[t].fanout;
    rank /= tiers_[t].fanout;
  }
  return c;
}

int Topology::rank_of(const std::vector<int>& coords) const {
  TZ_CHECK_EQ(coords.size(), tiers_.size());
  int rank = 0;
  for (int t = num_tiers() - 1; t >= 0; --t) {
    TZ_CHECK(coords[t] >= 0 && coords[t] < tiers_[t].fanout, "coordinate {} of tier {}", coords[t], t);
    rank = rank * tiers_[t].fanout + coords[t];
  }
  return rank;
}

int Topology::group_size(TierSet tiers) const {
  int n = 1;
  for (int t = 0; t < num_tiers(); ++t)
    if (tiers & tier_bit(t)) n *= tiers_[t].fanout;
  return n;
}

std::vector<int> Topology::group_ranks(int rank, TierSet tiers) const {
  const std::vector<int> base = coords(rank);
  const int n = group_size(tiers);
  std::vector<int> members;
  members.reserve(n);
  for (int g = 0; g < n; ++g) {
    std::vector<int> c = base;
    int rest = g;
    for (int t = 0; t < num_tiers(); ++t) {
      if (!(tiers & tier_bit(t))) continue;
      c[t] = rest % tiers_[t].fanout;
      rest /= tiers_[t].fanout;
    }
    members.push_back(rank_of(c));
  }
  return members;
}

int Topology::group_rank(int rank, TierSet tiers) const {
  const std::vector<int> c = coords(rank);
  int g = 0;
  for (int t = num_tiers() - 1; t >= 0; --t)
    if (tiers & tier_bit(t)) g = g * tiers_[t].fanout + c[t];
  return g;
}

int Topology::group_color(int rank, TierSet tiers) const {
  const std::vector<int> c = coords(rank);
  int color = 0;
  for (int t = num_tiers() - 1; t >= 0; --t)
    if (!(tiers & tier_bit(t))) color = color * tiers_[t].fanout + c[t];
  return color;
}

std::string Topology::tier_set_name(TierSet tiers) const {
  if (tiers == 0) return "self";
  if (tiers == tiers_up_to(num_tiers() - 1)) return "world";
  std::string s;
  for (int t = 0; t < num_tiers(); ++t)
    if (tiers & tier_bit(t)) s += (s.empty() ? "" : "+") + tiers_[t].name;
  return s;
}

void Topology::check_hosts(const std::vector<std::string>& hostnames, bool emulate) const {
  if (static_cast<int>(hostnames.size()) != world_size())
    fail_input("topology {}: describes {} ranks but {} ranks are running", name_, world_size(),
               hostnames.size());
  if (host_tier_ < 0 || emulate) return;
  const TierSet host = tiers_up_to(host_tier_);
  std::map<std::string, int> first_rank_on_host;
  for (int r = 0; r < world_size(); ++r) {
    for (int peer : group_ranks(r, host)) {
      if (hostnames[peer] != hostnames[r])
        fail_input("topology {}: puts ranks {} and {} on one {} but they run on hosts '{}' and '{}'", name_,
                   r, peer, tiers_[host_tier_].name, hostnames[r], hostnames[peer]);
    }
    auto [it, inserted] = first_rank_on_host.emplace(hostnames[r], r);
    if (!inserted && group_color(it->second, host) != group_color(r, host))
      fail_input(
          "topology {}: puts ranks {} and {} on different {}s but both run on host '{}' (pass --emulate to "
          "emulate a multi-node topology on one machine)",
          name_, it->second, r, tiers_[host_tier_].name, hostnames[r]);
  }
}

nlohmann::json Topology::to_json() const {
  nlohmann::json doc;
  doc["name"] = name_;
  if (!description_.empty()) doc["description"] = description_;
  for (const auto& t : tiers_) {
    nlohmann::json tj = {
        {"name", t.name}, {"bandwidth_gbps", t.bandwidth_gbps}, {"latency_us", t.latency_us}};
    tj["fanout"] = t.fanout;
    if (t.reduce_gbps > 0) tj["reduce_gbps"] = t.reduce_gbps;
    if (!t.source.empty()) tj["source"] = t.source;
    doc["tiers"].push_back(tj);
  }
  if (auto_outer_) doc["tiers"].back()["fanout"] = "auto";
  if (host_tier_ >= 0) doc["host_tier"] = tiers_[host_tier_].name;
  if (!device_.name.empty() || device_.peak_tflops > 0) {
    doc["device"] = {{"name", device_.name},
                     {"peak_tflops", device_.peak_tflops},
                     {"memory_gib", device_.memory_gib},
                     {"memory_bandwidth_gbps", device_.memory_bandwidth_gbps}};
    if (!device_.source.empty()) doc["device"]["source"] = device_.source;
  }
  return doc;
}

}  // namespace tz
