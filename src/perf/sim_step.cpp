#include "perf/sim_step.hpp"

#include <algorithm>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "perf/collective_time.hpp"

namespace tz::perf {
namespace {

constexpr double kStart_s = 1000.0;  // every clock is set here after the set-up traffic

// Runs one tier step on its tier's communicator with buffers of the step's payload.
void run_tier_step(Communicator& c, const TierStep& s, std::vector<std::byte>& a, std::vector<std::byte>& b) {
  const std::size_t p = static_cast<std::size_t>(c.size()), payload = s.payload_bytes;
  auto reducible = [&](std::size_t per) {  // widest reducible type dividing the per-rank size
    return per % 4 == 0 ? DType::f32 : DType::bf16;
  };
  a.resize(std::max(a.size(), payload));
  b.resize(std::max(b.size(), payload));
  switch (s.kind) {
    case CollectiveKind::all_gather:
      TZ_CHECK_EQ(payload % p, std::size_t{0});
      c.all_gather(a.data(), b.data(), payload / p, DType::u8).wait();
      return;
    case CollectiveKind::all_to_all:
      TZ_CHECK_EQ(payload % p, std::size_t{0});
      c.all_to_all(a.data(), b.data(), payload / p, DType::u8).wait();
      return;
    case CollectiveKind::reduce_scatter: {
      TZ_CHECK_EQ(payload % (2 * p), std::size_t{0});
      const DType t = reducible(payload / p);
      c.reduce_scatter(a.data(), b.data(), payload / p / dtype_bytes(t), t).wait();
      return;
    }
    case CollectiveKind::all_reduce: {
      TZ_CHECK_EQ(payload % 2, std::size_t{0});
      const DType t = reducible(payload);
      c.all_reduce(a.data(), b.data(), payload / dtype_bytes(t), t).wait();
      return;
    }
    default:
      TZ_CHECK(false, "no simulated run for {}", collective_name(s.kind));
  }
}

}  // namespace

SimStepResult simulate_step_comm(const ModelShape& model, const Topology& topo, const PartitionPlan& plan,
                                 SimOptions options) {
  const PlannedStep planned = plan_step(model, topo, plan);
  const int n = topo.world_size(), T = topo.num_tiers();
  const std::vector<std::string>& labels = planned.schedule.labels();  // tiers, then flat groups
  auto index_of = [&](const std::string& label) {
    return static_cast<std::size_t>(std::find(labels.begin(), labels.end(), label) - labels.begin());
  };
  SimStepResult out;
  for (const auto& label : labels) out.tiers.push_back(SimTierResult{.name = label});
  for (const auto& c : planned.schedule.collectives())
    for (const TierStep& s : c.steps) {
      const double t = collective_time_s(s.kind, double(s.payload_bytes), s.group_size,
                                         link_of(topo.tier(s.tier), options.reduce_GBps));
      out.tiers[index_of(s.label)].closed_form_s += t;
      out.closed_form_total_s += t;
    }
  for (const auto& [name, bytes] : planned.schedule.bytes_per_tier())
    out.tiers[index_of(name)].schedule_bytes = bytes;

  auto world = std::make_shared<SimWorld>(topo, options);
  CommOptions copt;
  copt.chunk_bytes = std::size_t{1} << 40;  // one message per step, as the closed form prices
  copt.timeout_s = 60;
  std::vector<double> end(n, 0.0), rank0_tier_s(labels.size(), 0.0);
  std::map<std::string, TierTraffic> rank0_traffic;
  run_thread_mesh(
      topo,
      [&](Mesh& mesh) {
        const int r = mesh.world().rank();
        for (int t = 0; t < T; ++t) mesh.tier(t);  // create the tier groups (bookkeeping traffic)
        for (const auto& c : planned.schedule.collectives())
          for (const TierStep& s : c.steps) mesh.flat_group(s.tiers);  // and the flat ones
        mesh.world().barrier().wait();
        mesh.ledger().reset();
        world->advance_to_s(r, kStart_s);
        std::vector<std::byte> a, b;
        for (const auto& c : planned.schedule.collectives())
          for (const TierStep& s : c.steps) {
            const double t0 = world->now_s(r);
            run_tier_step(mesh.flat_group(s.tiers), s, a, b);
            if (r == 0) rank0_tier_s[index_of(s.label)] += world->now_s(r) - t0;
          }
        end[r] = world->now_s(r);
        if (r == 0) rank0_traffic = mesh.ledger().snapshot();
      },
      copt,
      [&](std::vector<std::unique_ptr<Transport>> inner) {
        return make_sim_transports(world, std::move(inner));
      });
  for (std::size_t t = 0; t < labels.size(); ++t) {
    out.tiers[t].simulated_s = rank0_tier_s[t];
    auto it = rank0_traffic.find(labels[t]);
    out.tiers[t].ledger_bytes = it == rank0_traffic.end() ? 0.0 : it->second.bytes;
  }
  for (double e : end) out.simulated_total_s = std::max(out.simulated_total_s, e - kStart_s);
  return out;
}

}  // namespace tz::perf
