#include "perf/auto_planner.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz::perf {

std::string search_plan_name(const Topology& topo, const PartitionPlan::Tiers& tiers, bool qwz, bool qgz,
                             CollectiveAlgo collectives) {
  auto n = [&](int t) { return placement_name(topo, t); };
  std::string w = tiers[0] == tiers[1] ? n(tiers[0]) : n(tiers[0]) + "/" + n(tiers[1]);
  return fmt::format("W={} G={} O={}{}{}{}", w, n(tiers[2]), n(tiers[3]), qwz ? " +qwZ" : "",
                     qgz ? " +qgZ" : "", collectives == CollectiveAlgo::flat ? " flat" : "");
}

namespace {

// True when some collective of a step of `plan` runs differently with flat collectives.
bool has_flat_collective(const Topology& topo, const PartitionPlan& plan) {
  const ShardLayout layout({}, topo, plan.with_options([&] {
    PlanOptions o = plan.options();
    o.collectives = CollectiveAlgo::flat;
    return o;
  }()));
  for (TierSet s : {layout.forward_gather_tiers(), layout.backward_gather_tiers(),
                    layout.boundary_reduce_tiers(), layout.replica_tiers(), layout.refresh_gather_tiers()})
    if (layout.runs_flat(s)) return true;
  return !plan.options().qgz && layout.runs_flat(layout.grad_reduce_tiers());
}

}  // namespace

std::vector<PlanCandidate> search_plans(const ModelShape& model, const Topology& topo,
                                        const PlanOptions& base, const CostOptions& options) {
  std::vector<PlanCandidate> out;
  const int T = topo.num_tiers();
  for (int wf = kReplicated; wf < T; ++wf)
    for (int wb = kReplicated; wb <= wf; ++wb)
      for (int g = kReplicated; g < T; ++g)
        for (int o = g; o < T; ++o)
          for (int qw = 0; qw <= (wf >= 0 ? 1 : 0); ++qw)
            for (int qg = 0; qg <= (g >= 0 ? 1 : 0); ++qg)
              for (CollectiveAlgo algo : {CollectiveAlgo::hierarchical, CollectiveAlgo::flat}) {
                const PartitionPlan::Tiers tiers = {wf, wb, g, o};
                PlanOptions opt = base;
                opt.qwz = qw == 1;
                opt.qgz = qg == 1;
                opt.collectives = algo;
                PartitionPlan plan(search_plan_name(topo, tiers, opt.qwz, opt.qgz, algo), tiers, opt);
                try {
                  plan.validate(topo);
                } catch (const InputError&) {
                  continue;  // an inconsistent placement: not a plan
                }
                if (algo == CollectiveAlgo::flat && !has_flat_collective(topo, plan)) continue;  // same plan
                out.push_back(PlanCandidate{plan, predict_step(model, topo, plan, options)});
              }
  std::stable_sort(out.begin(), out.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.cost.fits != b.cost.fits) return a.cost.fits;
    return a.cost.step_s < b.cost.step_s;
  });
  return out;
}

}  // namespace tz::perf

namespace tz::perf {

PartitionPlan preset_with_options(std::string_view name, const Topology& topo, const PlanOptions& base) {
  PartitionPlan p = PartitionPlan::preset(name, topo);
  PlanOptions opt = base;
  opt.qwz = p.options().qwz;
  opt.qgz = p.options().qgz;
  return p.with_options(opt);
}

}  // namespace tz::perf
