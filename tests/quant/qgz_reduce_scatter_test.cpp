// qgZ reduce-scatter: over every tier subset of frontier-mini-shaped meshes of 1..8 ranks, the result
// sits at Mesh::reduce_scatter's layout and stays within the error bound that the quantization steps
// imply (replayed here on exact values), the bytes per tier are the documented formula and at most
// 0.28x the bf16 reduce-scatter's, and tiny sizes fall back to the unquantized path.
#include "quant/qgz_reduce_scatter.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"
#include "quant_test_topologies.hpp"
#include "tier_bytes.hpp"

namespace tz {
namespace {

using quant_test::tier_bytes;
using quant_test::tiers_of;

// The full gradient of world rank r: group_size * count values, magnitudes varying by block.
std::vector<float> make_grad(int r, std::size_t n) {
  std::mt19937 rng(777 + r);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = g(rng) * std::ldexp(1.0f, static_cast<int>((i / 50 + r) % 7) - 3);
  return x;
}

// The error bound of qgZ, replayed on exact values for every rank of the world. Per rank it tracks
// the exact partial sum V (fp64) and a bound E on |actual - V| for every element of its current
// input. A step over tier t (fan-out f) gives rank p the slice c_t(p) of each group member's input;
// quantizing a value whose block has largest actual magnitude m (<= max over the block of |V| + E)
// adds at most s * kQuantHalfStepBudget with s <= m / qmax (1 + 2^-23); summing f terms in fp32 adds
// at most f * 2^-24 * sum |terms|. So E' = sum over members (E + m / qmax * budget) + rounding.
struct Replay {
  std::vector<double> v, e;
};

std::vector<Replay> replay_bound(const Topology& topo, TierSet tiers, std::size_t count,
                                 const QuantOptions& opts) {
  const int world = topo.world_size();
  const std::size_t n = count * topo.group_size(tiers);
  std::vector<Replay> cur(world);
  for (int r = 0; r < world; ++r) {
    const auto g = make_grad(r, n);
    cur[r].v.assign(g.begin(), g.end());
    cur[r].e.assign(n, 0.0);
  }
  const double qmax = quant_qmax(opts.bits);
  std::size_t m = n;
  for (int t : tiers_of(topo, tiers)) {
    const int f = topo.tier(t).fanout;
    if (f == 1) continue;  // qgZ skips tiers that move nothing
    const std::size_t slice = m / f;
    std::vector<Replay> next(world);
    for (int p = 0; p < world; ++p) {
      const std::size_t off = topo.coords(p)[t] * slice;
      Replay& out = next[p];
      out.v.assign(slice, 0.0);
      out.e.assign(slice, 0.0);
      std::vector<double> abs_sum(slice, 0.0);
      for (int member : topo.group_ranks(p, tier_bit(t))) {
        const Replay& in = cur[member];
        for (std::size_t b = 0; b < slice; b += opts.block_size) {
          const std::size_t hi = std::min(slice, b + opts.block_size);
          double amax = 0;
          for (std::size_t i = b; i < hi; ++i)
            amax = std::max(amax, std::fabs(in.v[off + i]) + in.e[off + i]);
          const double quant_err = amax / qmax * (1 + 0x1p-23) * kQuantHalfStepBudget;
          for (std::size_t i = b; i < hi; ++i) {
            out.v[i] += in.v[off + i];
            out.e[i] += in.e[off + i] + quant_err;
            abs_sum[i] += std::fabs(in.v[off + i]) + in.e[off + i] + quant_err;
          }
        }
      }
      for (std::size_t i = 0; i < slice; ++i) out.e[i] += f * 0x1p-24 * abs_sum[i];
    }
    cur = std::move(next);
    m = slice;
  }
  return cur;
}

TEST(QgzReduceScatter, WithinBoundAndFormulaOnEveryTierSubset) {
  for (const Topology& topo : quant_test::test_topologies()) {
    for (TierSet tiers = 0; tiers < 8; ++tiers) {
      for (std::size_t count : {std::size_t{333}, std::size_t{2048}}) {
        const QuantOptions opts =
            count == 333 ? QuantOptions{.bits = QuantBits::int4, .block_size = 64} : kQgzDefaultOptions;
        const auto bound = replay_bound(topo, tiers, count, opts);
        run_thread_mesh(topo, [&](Mesh& mesh) {
          const int r = mesh.world().rank();
          const std::string what = fmt::format("topology {} world {} rank {} tiers {} count {}", topo.name(),
                                               topo.world_size(), r, topo.tier_set_name(tiers), count);
          ASSERT_TRUE(qgz_quantized_path(topo, tiers, count, opts)) << what;
          const std::size_t n = count * mesh.group_size(tiers);
          const auto grad = make_grad(r, n);
          // Exact fp64 sum of this rank's block over its group.
          const std::size_t k = mesh.shard_index(tiers);
          std::vector<double> exact(count, 0.0);
          for (int member : topo.group_ranks(r, tiers)) {
            const auto g = make_grad(member, n);
            for (std::size_t i = 0; i < count; ++i) exact[i] += g[k * count + i];
          }
          std::vector<float> out(count, -1.0f);
          const auto before = mesh.ledger().snapshot();
          qgz_reduce_scatter(mesh, tiers, grad.data(), out.data(), count, opts).wait();
          const auto traffic = mesh.ledger().since(before);
          double max_err = 0, max_bound = 0;
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_DOUBLE_EQ(bound[r].v[i], exact[i]) << what << " i " << i;  // the replay's layout agrees
            const double err = std::fabs(out[i] - exact[i]);
            ASSERT_LE(err, bound[r].e[i]) << what << " i " << i << " got " << out[i] << " exact " << exact[i];
            max_err = std::max(max_err, err);
            max_bound = std::max(max_bound, bound[r].e[i]);
          }
          // The bf16 reduce-scatter of the same gradient, for the byte comparison.
          std::vector<bf16> grad16(n), out16(count);
          const auto bf16_before = mesh.ledger().snapshot();
          mesh.reduce_scatter(tiers, grad16.data(), out16.data(), count, DType::bf16).wait();
          const auto bf16_traffic = mesh.ledger().since(bf16_before);
          std::size_t m = n;
          for (int t : tiers_of(topo, tiers)) {
            const int f = topo.tier(t).fanout;
            if (f == 1) continue;
            const std::size_t slice = m / f;
            const std::string& label = mesh.tier(t).label();
            const double expect = double(f - 1) * quantized_bytes(slice, opts);
            EXPECT_NEAR(tier_bytes(traffic, label), expect, 1e-9 * expect) << what << " tier " << label;
            const double bf16_bytes = tier_bytes(bf16_traffic, label);
            EXPECT_NEAR(bf16_bytes, double(f - 1) * slice * 2, 1e-9 * bf16_bytes)
                << what << " tier " << label;
            if (count == 2048) {
              const double ratio = tier_bytes(traffic, label) / bf16_bytes;
              EXPECT_LE(ratio, 0.28) << what << " tier " << label;
              if (r == 0 && tiers == 7 && topo.world_size() == 8)
                std::printf("qgZ INT4 B=%zu bytes vs bf16 on tier %s: %.4f (max error %.3g, bound %.3g)\n",
                            opts.block_size, label.c_str(), ratio, max_err, max_bound);
            }
            m = slice;
          }
        });
      }
    }
  }
}

TEST(QgzReduceScatter, TinySizesFallBackToExactReduceScatter) {
  const Topology topo = Topology::load("frontier-mini");
  const QuantOptions opts = kQgzDefaultOptions;
  ASSERT_FALSE(qgz_quantized_path(topo, 7, 3, opts));
  const std::size_t before = qgz_fallback_count();
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const int r = mesh.world().rank();
    const std::size_t count = 3, n = count * 8;
    const auto grad = make_grad(r, n);
    std::vector<float> out(count), plain(count);
    qgz_reduce_scatter(mesh, 7, grad.data(), out.data(), count, opts).wait();
    mesh.reduce_scatter(7, grad.data(), plain.data(), count, DType::f32).wait();
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(out[i], plain[i]) << "rank " << r << " i " << i;
  });
  EXPECT_EQ(qgz_fallback_count(), before + 8);
}

TEST(QgzReduceScatter, NanPropagatesAndIsCounted) {
  const Topology topo = quant_test::frontier_mini_with({2, 1, 1});
  run_thread_mesh(topo, [&](Mesh& mesh) {
    const std::size_t count = 512;
    std::vector<float> grad(2 * count, 1.0f), out(count);
    if (mesh.world().rank() == 0)
      grad[count + 10] = std::numeric_limits<float>::infinity();  // rank 1's block
    QuantStats stats;
    qgz_reduce_scatter(mesh, 1, grad.data(), out.data(), count, kQgzDefaultOptions, &stats).wait();
    EXPECT_EQ(stats.nonfinite_blocks, mesh.world().rank() == 0 ? 1u : 0u);
    for (std::size_t i = 0; i < count; ++i) {
      const bool poisoned = mesh.world().rank() == 1 && i < 256;  // the block holding element 10
      if (poisoned)
        EXPECT_TRUE(std::isnan(out[i])) << i;
      else
        EXPECT_EQ(out[i], 2.0f) << i;
    }
  });
}

}  // namespace
}  // namespace tz
