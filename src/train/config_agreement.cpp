#include "train/config_agreement.hpp"

#include <vector>

#include "core/error.hpp"

namespace tz {

std::uint64_t config_hash(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

void check_config_agreement(Communicator& world, std::string_view canonical_text) {
  const std::uint64_t mine = config_hash(canonical_text);
  std::vector<std::uint64_t> all(world.size());
  world.all_gather(&mine, all.data(), sizeof(mine), DType::u8).wait();
  std::string differing;
  for (int r = 1; r < world.size(); ++r)
    if (all[r] != all[0])
      differing += fmt::format("{}rank {} ({:016x})", differing.empty() ? "" : ", ", r, all[r]);
  if (!differing.empty())
    fail_input(
        "ranks run different configurations: rank 0 has hash {:016x} but {} differ (check the config, "
        "model, topology, plan and data arguments of every rank)",
        all[0], differing);
}

}  // namespace tz
