// Measured collective curves: strict reading and the log-space interpolation described in
// collective_curve.hpp.
#include "topology/collective_curve.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {

const std::vector<std::string_view>& curve_op_names() {
  static const std::vector<std::string_view> names = {"all_gather", "reduce_scatter", "all_reduce",
                                                      "all_to_all"};
  return names;
}

namespace {

std::vector<double> positive_numbers(const JsonFields& f, std::string_view key) {
  const nlohmann::json& a = f.raw(key);
  if (!a.is_array() || a.empty())
    f.fail(key, fmt::format("must be a non-empty array of numbers, got {}", a.dump()));
  std::vector<double> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number()) f.fail(key, fmt::format("[{}] must be a number, got {}", i, a[i].dump()));
    const double v = a[i].get<double>();
    if (!(v > 0) || !std::isfinite(v))
      f.fail(key, fmt::format("[{}] must be a finite number > 0, got {}", i, v));
    out.push_back(v);
  }
  return out;
}

// Below the smallest size: the time of the row's two smallest sizes continued as a straight line in
// the size (the alpha-beta form t = a + S/B through them), its intercept a clamped to [0, t(S1)]; one
// size only: the time is held. Returns busbw at s < sizes[0] (the factor (p-1)/p cancels).
double below_table(const std::vector<double>& sizes, const std::vector<double>& bw, double s) {
  const double t1 = sizes[0] / bw[0];
  double a = t1;  // one size: the time is held
  if (sizes.size() > 1) {
    const double t2 = sizes[1] / bw[1];
    const double slope = (t2 - t1) / (sizes[1] - sizes[0]);
    a = std::clamp(t1 - slope * sizes[0], 0.0, t1);
  }
  return s / (a + (t1 - a) * s / sizes[0]);
}

// Log-log interpolation of one row at size s (the within-row rule).
double row_at_fast(const std::vector<double>& sizes, const std::vector<double>& bw, double s) {
  if (s <= sizes.front()) return below_table(sizes, bw, s);
  if (s >= sizes.back()) return bw.back();
  const std::size_t i =
      static_cast<std::size_t>(std::upper_bound(sizes.begin(), sizes.end(), s) - sizes.begin()) - 1;
  const double w = std::log(s / sizes[i]) / std::log(sizes[i + 1] / sizes[i]);
  return std::exp((1 - w) * std::log(bw[i]) + w * std::log(bw[i + 1]));
}

double row_at_ref(const std::vector<double>& sizes, const std::vector<double>& bw, double s) {
  if (s <= sizes[0]) {  // the alpha-beta line through the two smallest sizes, intercept in [0, t1]
    const double t1 = sizes[0] / bw[0];
    double latency = t1;
    if (sizes.size() >= 2) {
      latency = t1 - (sizes[1] / bw[1] - t1) / (sizes[1] - sizes[0]) * sizes[0];
      if (latency < 0) latency = 0;
      if (latency > t1) latency = t1;
    }
    const double per_byte = (t1 - latency) / sizes[0];
    return s / (latency + per_byte * s);
  }
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    if (s == sizes[i]) return bw[i];
    if (s > sizes[i] && s < sizes[i + 1]) {
      const double slope =
          (std::log(bw[i + 1]) - std::log(bw[i])) / (std::log(sizes[i + 1]) - std::log(sizes[i]));
      return std::exp(std::log(bw[i]) + slope * (std::log(s) - std::log(sizes[i])));
    }
  }
  return bw[bw.size() - 1];  // busbw held above the largest size
}

void check_query(const CollectiveCurve& c, int group_size, double size_bytes) {
  TZ_CHECK(!c.rows.empty() && !c.sizes_bytes.empty(), "empty curve");
  TZ_CHECK(group_size >= 2, "curve queried for a group of {}", group_size);
  TZ_CHECK(size_bytes > 0 && std::isfinite(size_bytes), "curve queried at {} bytes", size_bytes);
}

}  // namespace

CollectiveCurve parse_collective_curve(const nlohmann::json& doc, const std::string& where,
                                       const std::vector<std::string>& tier_names) {
  JsonFields f(doc, where);
  f.allow_only({"tiers", "op", "library", "dtype", "source", "note", "sizes_bytes", "rows"});
  CollectiveCurve c;
  const nlohmann::json& tiers = f.raw("tiers");
  if (!tiers.is_array() || tiers.empty())
    f.fail("tiers", fmt::format("must be a non-empty array of tier names, got {}", tiers.dump()));
  for (const auto& t : tiers) {
    if (!t.is_string()) f.fail("tiers", fmt::format("must hold tier names, got {}", t.dump()));
    const auto it = std::find(tier_names.begin(), tier_names.end(), t.get<std::string>());
    if (it == tier_names.end()) f.fail("tiers", fmt::format("names unknown tier '{}'", t.get<std::string>()));
    const TierSet bit = TierSet{1} << (it - tier_names.begin());
    if (c.tiers & bit) f.fail("tiers", fmt::format("names tier '{}' twice", t.get<std::string>()));
    c.tiers |= bit;
  }
  c.op = f.str("op");
  const auto& ops = curve_op_names();
  if (std::find(ops.begin(), ops.end(), c.op) == ops.end())
    f.fail("op", fmt::format("must be all_gather, reduce_scatter, all_reduce or all_to_all, got '{}'", c.op));
  c.library = f.str("library");
  if (c.library.empty()) f.fail("library", "must name who measured the curve (rccl, nccl, tierzero, ...)");
  c.dtype = f.str_or("dtype", "");
  c.source = f.str("source");
  if (c.source.empty()) f.fail("source", "must say where the figures come from");
  c.sizes_bytes = positive_numbers(f, "sizes_bytes");
  for (std::size_t i = 1; i < c.sizes_bytes.size(); ++i)
    if (!(c.sizes_bytes[i] > c.sizes_bytes[i - 1]))
      f.fail("sizes_bytes", fmt::format("must be strictly increasing: [{}] = {} after {}", i,
                                        c.sizes_bytes[i], c.sizes_bytes[i - 1]));
  const nlohmann::json& rows = f.raw("rows");
  if (!rows.is_array() || rows.empty())
    f.fail("rows", "must be a non-empty array of {group_size, busbw_GBps}");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    JsonFields rf(rows[i], fmt::format("{}: rows[{}]", where, i));
    if (rf.has("busbw_gbps"))
      rf.fail("busbw_gbps", "was renamed 'busbw_GBps' (GB/s, 1e9 bytes per second, never Gb/s)");
    rf.allow_only({"group_size", "busbw_GBps", "note"});
    CurveRow row;
    const long long p = rf.integer("group_size");
    if (p < 2 || p > (1 << 24)) rf.fail("group_size", fmt::format("must be an integer >= 2, got {}", p));
    row.group_size = static_cast<int>(p);
    if (!c.rows.empty() && row.group_size <= c.rows.back().group_size)
      rf.fail("group_size", fmt::format("must be larger than the previous row's ({}), got {}",
                                        c.rows.back().group_size, p));
    row.busbw_GBps = positive_numbers(rf, "busbw_GBps");
    if (row.busbw_GBps.size() != c.sizes_bytes.size())
      rf.fail("busbw_GBps",
              fmt::format("has {} values for {} sizes_bytes", row.busbw_GBps.size(), c.sizes_bytes.size()));
    c.rows.push_back(std::move(row));
  }
  return c;
}

nlohmann::json collective_curve_to_json(const CollectiveCurve& c,
                                        const std::vector<std::string>& tier_names) {
  nlohmann::json tiers = nlohmann::json::array();
  for (std::size_t t = 0; t < tier_names.size(); ++t)
    if (c.tiers & (TierSet{1} << t)) tiers.push_back(tier_names[t]);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) rows.push_back({{"group_size", r.group_size}, {"busbw_GBps", r.busbw_GBps}});
  nlohmann::json doc = {{"tiers", tiers},
                        {"op", c.op},
                        {"library", c.library},
                        {"source", c.source},
                        {"sizes_bytes", c.sizes_bytes},
                        {"rows", rows}};
  if (!c.dtype.empty()) doc["dtype"] = c.dtype;
  return doc;
}

double curve_busbw_GBps(const CollectiveCurve& c, int group_size, double size_bytes) {
  check_query(c, group_size, size_bytes);
  const double block = size_bytes / group_size;
  auto row_bw = [&](const CurveRow& r) {
    return row_at_fast(c.sizes_bytes, r.busbw_GBps, block * r.group_size);
  };
  const auto hi = std::lower_bound(c.rows.begin(), c.rows.end(), group_size,
                                   [](const CurveRow& r, int p) { return r.group_size < p; });
  if (hi == c.rows.begin()) return row_bw(c.rows.front());
  if (hi == c.rows.end()) return row_bw(c.rows.back());
  if (hi->group_size == group_size) return row_bw(*hi);
  const CurveRow& lo = *(hi - 1);
  const double w =
      std::log(double(group_size) / lo.group_size) / std::log(double(hi->group_size) / lo.group_size);
  return std::exp((1 - w) * std::log(row_bw(lo)) + w * std::log(row_bw(*hi)));
}

double curve_busbw_GBps_ref(const CollectiveCurve& c, int group_size, double size_bytes) {
  check_query(c, group_size, size_bytes);
  const double b = size_bytes / group_size;
  const CurveRow* below = nullptr;
  const CurveRow* above = nullptr;
  for (const auto& r : c.rows) {
    if (r.group_size <= group_size) below = &r;
    if (r.group_size >= group_size && above == nullptr) above = &r;
  }
  if (below == nullptr) below = above;
  if (above == nullptr) above = below;
  const double bw_below = row_at_ref(c.sizes_bytes, below->busbw_GBps, b * below->group_size);
  const double bw_above = row_at_ref(c.sizes_bytes, above->busbw_GBps, b * above->group_size);
  if (below == above) return bw_below;
  const double slope = (std::log(bw_above) - std::log(bw_below)) /
                       (std::log(double(above->group_size)) - std::log(double(below->group_size)));
  return std::exp(std::log(bw_below) +
                  slope * (std::log(double(group_size)) - std::log(double(below->group_size))));
}

}  // namespace tz
