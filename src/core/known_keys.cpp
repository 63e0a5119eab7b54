#include "core/known_keys.hpp"

#include <algorithm>
#include <cstddef>

namespace tz {
namespace {

constexpr std::size_t kWholeListBytes = 300;  // longer lists are cut to the nearest keys
constexpr std::size_t kNearest = 5;
constexpr std::size_t kCompared = 64;  // bytes of the given key compared (it may be huge)

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string_view>& keys) {
  std::string out;
  for (auto k : keys) out.append(out.empty() ? "" : ", ").append(k);
  return out;
}

}  // namespace

std::string known_keys_text(std::string_view given, const std::vector<std::string_view>& known) {
  const std::string all = join(known);
  if (all.size() <= kWholeListBytes) return "known: " + all;
  const std::string_view probe = given.substr(0, kCompared);
  std::vector<std::pair<std::size_t, std::string_view>> ranked;
  for (auto k : known) ranked.emplace_back(edit_distance(probe, k), k);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string_view> nearest;
  for (std::size_t i = 0; i < ranked.size() && i < kNearest; ++i) nearest.push_back(ranked[i].second);
  return "nearest: " + join(nearest) + "; " + std::to_string(known.size()) + " keys in all";
}

}  // namespace tz
