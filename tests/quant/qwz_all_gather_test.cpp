// qwZ all-gather: over every tier subset of frontier-mini-shaped meshes of 1..8 ranks, every rank
// gets bitwise the reference round trip of every shard at the Mesh::all_gather layout, and the bytes
// per tier are the documented formula and at most 0.53x the bf16 all-gather's.
#include "quant/qwz_all_gather.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"
#include "device/cpu/block_quantize.hpp"
#include "quant_test_topologies.hpp"
#include "tier_bytes.hpp"

namespace tz {
namespace {

using quant_test::tier_bytes;
using quant_test::tiers_of;

// Shard k of the test tensor as bytes of dtype (same on every rank that asks).
std::vector<std::uint8_t> make_shard(int k, std::size_t count, DType dtype) {
  std::mt19937 rng(1234 + k);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::uint8_t> out(count * dtype_bytes(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    const float v = g(rng) * (1.0f + static_cast<float>(k));
    const bf16 h = to_bf16(v);
    if (dtype == DType::f32)
      std::memcpy(out.data() + 4 * i, &v, 4);
    else
      std::memcpy(out.data() + 2 * i, &h.bits, 2);
  }
  return out;
}

std::vector<std::uint8_t> ref_round_trip(const std::vector<std::uint8_t>& shard, std::size_t count,
                                         DType dtype, const QuantOptions& opts) {
  std::vector<std::uint8_t> q(quantized_bytes(count, opts)), out(shard.size());
  quantize_ref(shard.data(), dtype, count, q.data(), opts);
  dequantize_ref(q.data(), count, out.data(), dtype, opts);
  return out;
}

TEST(QwzAllGather, MatchesReferenceAndFormulaOnEveryTierSubset) {
  for (const Topology& topo : quant_test::test_topologies()) {
    run_thread_mesh(topo, [&](Mesh& mesh) {
      for (TierSet tiers = 0; tiers < 8; ++tiers) {
        const int group = mesh.group_size(tiers);
        for (DType dtype : {DType::f32, DType::bf16})
          for (std::size_t count : {std::size_t{1}, std::size_t{300}, std::size_t{4096}}) {
            const QuantOptions opts =
                count == 300 ? QuantOptions{.bits = QuantBits::int4, .block_size = 64} : kQwzDefaultOptions;
            const std::string what = fmt::format("topology {} world {} rank {} tiers {} dtype {} count {}",
                                                 topo.name(), topo.world_size(), mesh.world().rank(),
                                                 topo.tier_set_name(tiers), dtype_name(dtype), count);
            const std::size_t esz = dtype_bytes(dtype);
            const auto shard = make_shard(mesh.shard_index(tiers), count, dtype);
            std::vector<std::uint8_t> full(group * count * esz, 0xEE);
            const auto before = mesh.ledger().snapshot();
            QuantStats stats;
            qwz_all_gather(mesh, tiers, shard.data(), full.data(), count, dtype, opts, &stats).wait();
            const auto traffic = mesh.ledger().since(before);
            EXPECT_EQ(stats.blocks, quant_blocks(count, opts)) << what;
            for (int k = 0; k < group; ++k) {
              const auto expect = ref_round_trip(make_shard(k, count, dtype), count, dtype, opts);
              ASSERT_EQ(0, std::memcmp(expect.data(), full.data() + k * count * esz, expect.size()))
                  << what << " shard " << k;
            }
            // Bytes: on tier t, (f - 1) * span * quantized_bytes(count), span = product of the
            // fan-outs of the gathered tiers outside t.
            const auto bf16_before = mesh.ledger().snapshot();
            std::vector<bf16> shard16(count), full16(group * count);
            mesh.all_gather(tiers, shard16.data(), full16.data(), count, DType::bf16).wait();
            const auto bf16_traffic = mesh.ledger().since(bf16_before);
            std::size_t span = 1;
            const auto ts = tiers_of(topo, tiers);
            for (auto it = ts.rbegin(); it != ts.rend(); ++it) {
              const int f = topo.tier(*it).fanout;
              const std::string& label = mesh.tier(*it).label();
              const double expect = double(f - 1) * span * quantized_bytes(count, opts);
              EXPECT_NEAR(tier_bytes(traffic, label), expect, 1e-9 * expect) << what << " tier " << label;
              const double bf16_bytes = tier_bytes(bf16_traffic, label);
              EXPECT_NEAR(bf16_bytes, double(f - 1) * span * count * 2, 1e-9 * bf16_bytes) << what;
              if (count == 4096 && f > 1) {
                const double ratio = tier_bytes(traffic, label) / bf16_bytes;
                EXPECT_LE(ratio, 0.53) << what << " tier " << label;
                if (mesh.world().rank() == 0 && dtype == DType::bf16 && tiers == 7 && topo.world_size() == 8)
                  std::printf("qwZ INT8 B=%zu bytes vs bf16 on tier %s: %.4f\n", opts.block_size,
                              label.c_str(), ratio);
              }
              span *= f;
            }
          }
      }
    });
  }
}

TEST(QwzAllGather, FlatCommunicatorAndNanReporting) {
  run_thread_world(3, [](Communicator& comm) {
    const std::size_t count = 100;
    std::vector<float> shard(count, 0.5f * static_cast<float>(comm.rank() + 1)), full(3 * count);
    if (comm.rank() == 1) shard[70] = std::numeric_limits<float>::quiet_NaN();
    QuantStats stats;
    const auto before = comm.ledger().snapshot();
    qwz_all_gather(comm, shard.data(), full.data(), count, DType::f32, kQwzDefaultOptions, &stats).wait();
    EXPECT_EQ(stats.nonfinite_blocks, comm.rank() == 1 ? 1u : 0u);
    for (std::size_t i = 0; i < full.size(); ++i) {
      if (i / count == 1)
        EXPECT_TRUE(std::isnan(full[i])) << i;  // the poisoned block covers shard 1
      else
        EXPECT_EQ(full[i], 0.5f * static_cast<float>(i / count + 1)) << i;
    }
    const double bytes = comm.ledger().since(before).at(comm.label()).bytes;
    EXPECT_NEAR(bytes, 2.0 * quantized_bytes(count, kQwzDefaultOptions), 1e-6);
  });
}

TEST(QwzAllGather, RejectsUnquantizableDtype) {
  run_thread_world(1, [](Communicator& comm) {
    double x = 1, y = 0;
    EXPECT_THROW(qwz_all_gather(comm, &x, &y, 1, DType::f64), InputError);
  });
}

}  // namespace
}  // namespace tz
