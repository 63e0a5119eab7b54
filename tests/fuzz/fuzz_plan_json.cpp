// Fuzzes the plan-JSON reader: strict parsing, plan_spec_from_json and make_plan (presets, per-state
// tiers, options, validation) over two topologies: frontier-mini (2 x 2 x 2 ranks, a host tier) and
// a 3-tier one with an odd fan-out (2 x 1 x 3). A plan that reads must write back (to_json) to a plan
// that reads the same and describes itself.
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "fuzz_check.hpp"
#include "plan/partition_plan.hpp"

namespace {

const std::vector<tz::Topology>& topologies() {
  static const std::vector<tz::Topology> topos = [] {
    std::vector<tz::Topology> t;
    t.push_back(tz::Topology::load("frontier-mini").resolve(8));
    t.push_back(tz::Topology::from_json(tz::parse_json_strict(R"({"name": "odd", "tiers": [
        {"name": "pair", "fanout": 2, "bandwidth_GBps": 100, "latency_us": 1},
        {"name": "one", "fanout": 1, "bandwidth_GBps": 50, "latency_us": 2},
        {"name": "node", "fanout": 3, "bandwidth_GBps": 10, "latency_us": 5}]})",
                                                              "topology odd"),
                                        "odd"));
    return t;
  }();
  return topos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  if (!tz::fuzz::reads_or_input_error([&] { doc = tz::parse_json_strict(text, "plan fuzz.json"); })) return 0;
  for (const tz::Topology& topo : topologies()) {
    tz::PartitionPlan plan;
    if (!tz::fuzz::reads_or_input_error([&] { plan = tz::plan_from_json(doc, topo, "fuzz.json"); })) continue;
    const nlohmann::json written = plan.to_json(topo);
    tz::PartitionPlan back;
    tz::fuzz::expect(
        tz::fuzz::reads_or_input_error([&] { back = tz::plan_from_json(written, topo, "back"); }),
        "PartitionPlan::to_json does not read back");
    tz::fuzz::expect(back.tiers() == plan.tiers() && back.to_json(topo) == written,
                     "plan to_json -> plan_from_json changes the plan");
    tz::fuzz::expect(!plan.describe(topo).empty(), "empty plan description");
  }
  return 0;
}
