// Fuzzes the topology reader: strict parsing and Topology::from_json. A topology that reads must
// write back (to_json) to one that reads the same; a small resolved one must number its ranks
// consistently (rank_of(coords(r)) == r), and an "auto" one must resolve to a few world sizes or say
// why not.
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "fuzz_check.hpp"
#include "topology/topology.hpp"

namespace {

void check_ranks(const tz::Topology& topo) {
  if (topo.world_size() > 4096) return;
  for (int r = 0; r < topo.world_size(); ++r)
    tz::fuzz::expect(topo.rank_of(topo.coords(r)) == r, "rank_of(coords(r)) != r");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<tz::Topology> topo;
  if (!tz::fuzz::reads_or_input_error([&] {
        topo = tz::Topology::from_json(tz::parse_json_strict(text, "topology fuzz.json"), "fuzz.json");
      }))
    return 0;
  const nlohmann::json written = topo->to_json();
  std::optional<tz::Topology> back;
  tz::fuzz::expect(tz::fuzz::reads_or_input_error([&] { back = tz::Topology::from_json(written, "back"); }),
                   "Topology::to_json does not read back");
  tz::fuzz::expect(back->to_json() == written, "Topology to_json -> from_json changes the topology");
  tz::fuzz::expect(topo->world_size() >= 1, "world size < 1");
  if (topo->resolved()) {
    check_ranks(*topo);
  } else {
    for (int world : {1, 2, 3, 8, 12}) {
      std::optional<tz::Topology> r;
      if (tz::fuzz::reads_or_input_error([&] { r = topo->resolve(world); })) {
        tz::fuzz::expect(r->world_size() == world, "resolve(n) has a world of another size");
        check_ranks(*r);
      }
    }
  }
  return 0;
}
