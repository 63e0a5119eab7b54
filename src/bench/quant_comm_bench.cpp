// qwZ / qgZ against unquantized all-gather / reduce-scatter: time and bytes per tier
// (quant_comm_bench.hpp).
#include "bench/quant_comm_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>

#include "core/bf16.hpp"
#include "quant/qgz_reduce_scatter.hpp"
#include "quant/qwz_all_gather.hpp"

namespace tz {
namespace {

struct Measured {
  double median_ms = 0;
  std::map<std::string, TierTraffic> per_call;  // ledger delta of one call
};

Measured measure(Mesh& mesh, int iters, const std::function<void()>& call) {
  mesh.world().barrier().wait();
  const auto before = mesh.ledger().snapshot();
  call();  // warm-up, and the call whose bytes are reported
  Measured m;
  m.per_call = mesh.ledger().since(before);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    mesh.world().barrier().wait();
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  m.median_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  return m;
}

nlohmann::json row(const std::string& op, std::size_t elements, const Measured& m, const Measured* bf16_ref) {
  nlohmann::json j{{"op", op}, {"shard_elements", elements}, {"median_ms", m.median_ms}};
  for (const auto& [tier, t] : m.per_call) {
    if (t.bytes == 0) continue;
    j["bytes_per_tier"][tier] = t.bytes;
    if (bf16_ref && bf16_ref->per_call.count(tier) && bf16_ref->per_call.at(tier).bytes > 0)
      j["ratio_vs_bf16"][tier] = t.bytes / bf16_ref->per_call.at(tier).bytes;
  }
  return j;
}

}  // namespace

nlohmann::json run_quant_comm_bench(Mesh& mesh, const QuantCommBenchOptions& opts) {
  const Topology& topo = mesh.topology();
  const TierSet tiers = opts.tiers & tiers_up_to(topo.num_tiers() - 1);
  const std::size_t group = mesh.group_size(tiers);
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937 rng(mesh.world().rank());
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (std::size_t n : opts.shard_elements) {
    std::vector<float> grad(n * group), shard_f(n), full_f(n * group), out_f(n);
    for (auto& v : grad) v = g(rng);
    std::vector<bf16> grad16(n * group), shard16(n), full16(n * group), out16(n);
    for (std::size_t i = 0; i < grad.size(); ++i) grad16[i] = to_bf16(grad[i]);
    for (std::size_t i = 0; i < n; ++i) shard16[i] = grad16[i];

    const Measured ag = measure(mesh, opts.iters, [&] {
      mesh.all_gather(tiers, shard16.data(), full16.data(), n, DType::bf16).wait();
    });
    const Measured qwz = measure(mesh, opts.iters, [&] {
      qwz_all_gather(mesh, tiers, shard16.data(), full16.data(), n, DType::bf16, opts.qwz).wait();
    });
    const Measured rs16 = measure(mesh, opts.iters, [&] {
      mesh.reduce_scatter(tiers, grad16.data(), out16.data(), n, DType::bf16).wait();
    });
    const Measured rs32 = measure(mesh, opts.iters, [&] {
      mesh.reduce_scatter(tiers, grad.data(), out_f.data(), n, DType::f32).wait();
    });
    const Measured qgz = measure(mesh, opts.iters, [&] {
      qgz_reduce_scatter(mesh, tiers, grad.data(), out_f.data(), n, opts.qgz).wait();
    });
    rows.push_back(row("all_gather bf16", n, ag, &ag));
    rows.push_back(row(fmt::format("qwz_all_gather {}", quant_bits_name(opts.qwz.bits)), n, qwz, &ag));
    rows.push_back(row("reduce_scatter bf16", n, rs16, &rs16));
    rows.push_back(row("reduce_scatter f32", n, rs32, &rs16));
    rows.push_back(row(fmt::format("qgz_reduce_scatter {}", quant_bits_name(opts.qgz.bits)), n, qgz, &rs16));
  }
  return {{"topology", topo.name()},
          {"tiers", topo.tier_set_name(tiers)},
          {"world_size", topo.world_size()},
          {"rows", rows}};
}

std::string format_quant_comm_bench(const nlohmann::json& result) {
  std::string out = fmt::format("topology {} ({} ranks), tiers {}; bytes are per rank per call\n",
                                result["topology"].get<std::string>(), result["world_size"].get<int>(),
                                result["tiers"].get<std::string>());
  out += fmt::format("{:<24} {:>13} {:>10}  {}\n", "op", "shard_elems", "median_ms", "tier: bytes (x bf16)");
  for (const auto& r : result["rows"]) {
    std::string tiers;
    if (r.contains("bytes_per_tier"))
      for (const auto& [tier, bytes] : r["bytes_per_tier"].items())
        tiers += fmt::format("  {}: {:.0f} ({:.3f})", tier, bytes.get<double>(),
                             r.contains("ratio_vs_bf16") && r["ratio_vs_bf16"].contains(tier)
                                 ? r["ratio_vs_bf16"][tier].get<double>()
                                 : 0.0);
    out += fmt::format("{:<24} {:>13} {:>10.3f}{}\n", r["op"].get<std::string>(),
                       r["shard_elements"].get<std::size_t>(), r["median_ms"].get<double>(), tiers);
  }
  return out;
}

}  // namespace tz
