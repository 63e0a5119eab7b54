#include "topology/topology.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/bandwidth_text.hpp"
#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"

namespace tz {

const std::vector<std::pair<std::string_view, std::string_view>>& embedded_topology_presets();

namespace {

constexpr long long kMaxRanks = 1LL << 30;  // rank numbers stay ints

// Keys renamed because "gbps" reads as gigabits per second while the figures were GB/s: an old key
// is an error that says what it became (a silent reading would be 8x off for a NIC's Gb/s figure).
void reject_renamed(const JsonFields& f, std::initializer_list<std::string_view> renamed) {
  for (std::string_view key : renamed) {
    if (!f.has(key)) continue;
    std::string now(key.substr(0, key.size() - 4));
    now += "GBps";
    f.fail(key, fmt::format("was renamed '{}' (GB/s, 1e9 bytes per second, never Gb/s): {}", now,
                            bandwidth_units_help()));
  }
}

// A bandwidth key: a number (GB/s) or a string with units (core/bandwidth_text.hpp).
double bandwidth_or(const JsonFields& f, std::string_view key, double fallback) {
  if (!f.has(key)) return fallback;
  const nlohmann::json& v = f.raw(key);
  if (v.is_string())
    return parse_bandwidth_GBps(v.get<std::string>(), f.where() + ": key '" + std::string(key) + "'");
  if (!v.is_number()) f.fail(key, fmt::format("must be {}, got {}", bandwidth_units_help(), json_excerpt(v)));
  return f.number(key);
}

Tier parse_tier(const nlohmann::json& doc, const std::string& where, bool outermost, bool* auto_fanout) {
  JsonFields f(doc, where);
  reject_renamed(f, {"bandwidth_gbps", "reduce_gbps"});
  f.allow_only({"name", "fanout", "bandwidth_GBps", "latency_us", "reduce_GBps", "cpu_call_us", "cpu_GBps",
                "source", "note"});
  Tier t;
  t.name = f.identifier("name");
  const auto& fan = f.raw("fanout");
  if (fan.is_string() && fan.get<std::string>() == "auto") {
    if (!outermost) f.fail("fanout", "may be \"auto\" only on the outermost tier");
    *auto_fanout = true;
    t.fanout = 1;
  } else {
    if (!fan.is_number_integer())
      f.fail("fanout", fmt::format("must be a positive integer or \"auto\", got {}", json_excerpt(fan)));
    t.fanout = static_cast<int>(f.integer("fanout", 1, 1 << 20));
  }
  f.raw("bandwidth_GBps");  // required: "missing key" otherwise
  t.bandwidth_GBps = bandwidth_or(f, "bandwidth_GBps", 0);
  if (!(t.bandwidth_GBps > 0)) f.fail("bandwidth_GBps", fmt::format("must be > 0, got {}", t.bandwidth_GBps));
  t.latency_us = f.number("latency_us");
  if (!(t.latency_us >= 0)) f.fail("latency_us", fmt::format("must be >= 0, got {}", t.latency_us));
  t.reduce_GBps = bandwidth_or(f, "reduce_GBps", 0);
  if (!(t.reduce_GBps >= 0)) f.fail("reduce_GBps", fmt::format("must be >= 0, got {}", t.reduce_GBps));
  t.cpu_call_us = f.number_or("cpu_call_us", 0);
  if (!(t.cpu_call_us >= 0) || !std::isfinite(t.cpu_call_us))
    f.fail("cpu_call_us", fmt::format("must be >= 0, got {}", t.cpu_call_us));
  t.cpu_GBps = bandwidth_or(f, "cpu_GBps", 0);
  if (!(t.cpu_GBps >= 0)) f.fail("cpu_GBps", fmt::format("must be >= 0, got {}", t.cpu_GBps));
  t.source = f.str_or("source", "");
  return t;
}

DeviceSpec parse_device(const nlohmann::json& doc, const std::string& where) {
  JsonFields f(doc, where);
  reject_renamed(f, {"memory_bandwidth_gbps", "quant_gbps"});
  f.allow_only(
      {"name", "peak_tflops", "memory_gib", "memory_bandwidth_GBps", "quant_GBps", "source", "note"});
  DeviceSpec d;
  d.name = f.str_or("name", "");
  d.peak_tflops = f.number_or("peak_tflops", 0);
  d.memory_gib = f.number_or("memory_gib", 0);
  d.memory_bandwidth_GBps = bandwidth_or(f, "memory_bandwidth_GBps", 0);
  d.quant_GBps = bandwidth_or(f, "quant_GBps", 0);
  d.source = f.str_or("source", "");
  for (auto [key, v] : {std::pair{"peak_tflops", d.peak_tflops},
                        {"memory_gib", d.memory_gib},
                        {"memory_bandwidth_GBps", d.memory_bandwidth_GBps},
                        {"quant_GBps", d.quant_GBps}}) {
    if (v < 0) f.fail(key, fmt::format("must be >= 0, got {}", v));
  }
  return d;
}

// A measured row's group size must be one the curve's tiers can form: the product of their fan-outs,
// or a multiple of the product of the fixed ones when the set holds the "auto" outermost tier.
void check_curve_group_sizes(const Topology& topo, const CollectiveCurve& c, const std::string& where) {
  long long fixed = 1;
  bool has_auto = false;
  for (int t = 0; t < topo.num_tiers(); ++t) {
    if (!(c.tiers & tier_bit(t))) continue;
    if (t + 1 == topo.num_tiers() && !topo.resolved())
      has_auto = true;
    else
      fixed *= topo.tier(t).fanout;
  }
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const int p = c.rows[i].group_size;
    if (has_auto ? p % fixed != 0 : p != fixed)
      fail_input("{}: rows[{}]: group_size {} is not a group of tiers {} ({} {})", where, i, p,
                 topo.tier_set_name(c.tiers), has_auto ? "a multiple of" : "exactly", fixed);
  }
}

}  // namespace

Topology Topology::from_json(const nlohmann::json& doc, std::string_view origin) {
  const std::string where = fmt::format("topology {}", origin);
  JsonFields f(doc, where);
  f.allow_only(
      {"name", "description", "tiers", "host_tier", "device", "collective_curves", "sources", "note"});
  Topology topo;
  topo.name_ = f.identifier_or("name", std::string(origin));
  topo.description_ = f.str_or("description", "");
  const auto& tiers = f.raw("tiers");
  if (!tiers.is_array() || tiers.empty()) f.fail("tiers", "must be a non-empty array of tier objects");
  if (tiers.size() > 16) f.fail("tiers", fmt::format("has {} tiers, more than 16", tiers.size()));
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
  long long ranks = 1;  // each fan-out is at most 2^20, so the product cannot overflow before the check
  for (const auto& t : topo.tiers_) {
    ranks *= t.fanout;
    if (ranks > kMaxRanks) f.fail("tiers", fmt::format("fan-outs multiply to more than {} ranks", kMaxRanks));
  }
  if (f.has("host_tier")) {
    std::string host = f.str("host_tier");
    topo.host_tier_ = -1;
    for (int t = 0; t < topo.num_tiers(); ++t)
      if (topo.tiers_[t].name == host) topo.host_tier_ = t;
    if (topo.host_tier_ < 0) f.fail("host_tier", fmt::format("names unknown tier '{}'", text_excerpt(host)));
  }
  if (f.has("device")) topo.device_ = parse_device(f.raw("device"), where + ": device");
  if (f.has("collective_curves")) {
    const auto& curves = f.raw("collective_curves");
    if (!curves.is_array()) f.fail("collective_curves", "must be an array of curve objects");
    std::vector<std::string> names;
    for (const auto& t : topo.tiers_) names.push_back(t.name);
    for (std::size_t i = 0; i < curves.size(); ++i) {
      const std::string at = fmt::format("{}: collective_curves[{}]", where, i);
      CollectiveCurve c = parse_collective_curve(curves[i], at, names);
      check_curve_group_sizes(topo, c, at);
      for (const auto& other : topo.curves_)
        if (other.tiers == c.tiers && other.op == c.op && other.library == c.library)
          fail_input("{}: a second {} curve by {} for tiers {}", at, c.op, c.library,
                     topo.tier_set_name(c.tiers));
      topo.curves_.push_back(std::move(c));
    }
  }
  return topo;
}

const CollectiveCurve* Topology::find_curve(TierSet tiers, std::string_view op,
                                            std::string_view library) const {
  for (const auto& c : curves_)
    if (c.tiers == tiers && c.op == op && c.library == library) return &c;
  return nullptr;
}

std::vector<std::string> Topology::preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_topology_presets()) names.emplace_back(name);
  return names;
}

Topology Topology::load(std::string_view preset_or_path) {
  for (const auto& [name, text] : embedded_topology_presets()) {
    if (name == preset_or_path)
      return from_json(parse_json_strict(text, fmt::format("topology preset {}", name)), name);
  }
  const std::string path(preset_or_path);
  std::error_code ec;  // a path the OS cannot even look up (too long, ...) is "no such file" too
  if (std::filesystem::exists(path, ec)) return from_json(read_json_file(path, "topology"), path);
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  fail_input("topology '{}': not a preset ({}) and no such file", text_excerpt(preset_or_path, 256), known);
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
  std::int64_t inner = 1;
  for (int t = 0; t + 1 < num_tiers(); ++t) inner *= tiers_[t].fanout;
  if (!auto_outer_ && tiers_.back().fanout != outer_fanout)
    fail_input("topology {}: tier '{}' has fan-out {}, not {}", name_, tiers_.back().name,
               tiers_.back().fanout, outer_fanout);
  // In 64 bits: an int product would wrap (536870913 units of 8 ranks is 8 ranks in 32 bits).
  const std::int64_t world = inner * outer_fanout;
  if (world > std::numeric_limits<int>::max())
    fail_input("topology {}: {} units of tier '{}' of {} ranks each make {} ranks, more than {}", name_,
               outer_fanout, tiers_.back().name, inner, world, std::numeric_limits<int>::max());
  return resolve(static_cast<int>(world));
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
  fail_input("topology {}: no tier named '{}' (tiers: {})", name_, text_excerpt(name), known);
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
        {"name", t.name}, {"bandwidth_GBps", t.bandwidth_GBps}, {"latency_us", t.latency_us}};
    tj["fanout"] = t.fanout;
    if (t.reduce_GBps > 0) tj["reduce_GBps"] = t.reduce_GBps;
    if (t.cpu_call_us > 0) tj["cpu_call_us"] = t.cpu_call_us;
    if (t.cpu_GBps > 0) tj["cpu_GBps"] = t.cpu_GBps;
    if (!t.source.empty()) tj["source"] = t.source;
    doc["tiers"].push_back(tj);
  }
  if (auto_outer_) doc["tiers"].back()["fanout"] = "auto";
  if (host_tier_ >= 0) doc["host_tier"] = tiers_[host_tier_].name;
  if (!device_.name.empty() || device_.peak_tflops > 0) {
    doc["device"] = {{"name", device_.name},
                     {"peak_tflops", device_.peak_tflops},
                     {"memory_gib", device_.memory_gib},
                     {"memory_bandwidth_GBps", device_.memory_bandwidth_GBps}};
    if (device_.quant_GBps > 0) doc["device"]["quant_GBps"] = device_.quant_GBps;
    if (!device_.source.empty()) doc["device"]["source"] = device_.source;
  }
  if (!curves_.empty()) {
    std::vector<std::string> names;
    for (const auto& t : tiers_) names.push_back(t.name);
    for (const auto& c : curves_) doc["collective_curves"].push_back(collective_curve_to_json(c, names));
  }
  return doc;
}

}  // namespace tz
