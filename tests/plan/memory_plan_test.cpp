#include "plan/memory_plan.hpp"

#include <gtest/gtest.h>

#include "plan_test_util.hpp"

namespace tz {
namespace {

using plan_test::mini;
using plan_test::small_ranges;

// Padded to 8 ranks: 16 + 32 + 8 = 56 elements; the largest range is 32.
MemoryPlan memory(const PartitionPlan& plan, std::size_t activations = 0) {
  return plan_memory(ShardLayout(small_ranges(), mini(), plan), activations);
}

TEST(MemoryPlan, ThreeLevelByHand) {
  const MemoryPlan m = memory(PartitionPlan::preset("three-level", mini()), 1000);
  EXPECT_EQ(m.w_fwd_bytes, 56u / 2 * 2);          // bf16 over the gcd pair
  EXPECT_EQ(m.w_bwd_bytes, 0u);                   // gathered from the W_fwd shard
  EXPECT_EQ(m.grad_bytes, 56u / 4 * 4);           // fp32 over the node
  EXPECT_EQ(m.optim_bytes, 56u / 8 * 12);         // master + m + v over the system
  EXPECT_EQ(m.gather_buffer_bytes, 2u * 32 * 2);  // current + 1 prefetched, bf16
  EXPECT_EQ(m.grad_buffer_bytes, 32u * 2);
  EXPECT_EQ(m.boundary_buffer_bytes, 7u * 4 + 7 * 2);  // O-shard gradient (G is inner) + bf16 refresh source
  EXPECT_EQ(m.activation_bytes, 1000u);
  EXPECT_EQ(m.state_bytes(), 56u + 56 + 84);
  EXPECT_EQ(m.peak_bytes(), 56u + 56 + 84 + 128 + 64 + 42 + 1000);
}

TEST(MemoryPlan, ZeroppByHand) {
  const MemoryPlan m =
      memory(PartitionPlan::preset("zeropp", mini())
                 .with_options({.qwz = true, .qgz = true, .quant_block = 32, .prefetch_depth = 2}));
  EXPECT_EQ(m.w_fwd_bytes, 56u / 8 * 2);
  EXPECT_EQ(m.w_bwd_bytes, 56u / 4 * 2);  // hpZ secondary shard over the node
  EXPECT_EQ(m.grad_bytes, 56u / 8 * 4);
  EXPECT_EQ(m.optim_bytes, 56u / 8 * 12);
  // Largest slot: h0, 32 bf16 + 8 gathered shards of one INT8 block (32 codes + scale); three slots.
  EXPECT_EQ(m.gather_buffer_bytes, 3u * (64 + 8 * 36));
  EXPECT_EQ(m.grad_buffer_bytes, 64u);
  EXPECT_EQ(m.boundary_buffer_bytes, 7u * 2);  // G and O share a domain: only the refresh source
}

TEST(MemoryPlan, ReplicatedStatesAndFp32) {
  const MemoryPlan ddp = memory(PartitionPlan::preset("ddp", mini()));
  EXPECT_EQ(ddp.w_fwd_bytes, 56u * 2);
  EXPECT_EQ(ddp.w_bwd_bytes, 0u);
  EXPECT_EQ(ddp.grad_bytes, 56u * 4);
  EXPECT_EQ(ddp.optim_bytes, 56u * 12);
  EXPECT_EQ(ddp.working_bytes(), 56u * 2);  // no gather or gradient buffer; the bf16 refresh source
  const MemoryPlan z3 =
      memory(PartitionPlan::preset("zero3", mini()).with_options({.dtype_mode = DTypeMode::fp32}));
  EXPECT_EQ(z3.w_fwd_bytes, 56u / 8 * 4);
  EXPECT_EQ(z3.gather_buffer_bytes, 2u * 32 * 4);
  // Sharding everything divides the state bytes by the world size.
  EXPECT_EQ(memory(PartitionPlan::preset("zero3", mini())).state_bytes() * 8, ddp.state_bytes());
}

TEST(MemoryPlan, DoesNotFitNamesEveryState) {
  const MemoryPlan m = memory(PartitionPlan::preset("ddp", mini()));
  EXPECT_NO_THROW(check_fits(m, double(m.peak_bytes()), "ddp"));
  plan_test::expect_input_error([&] { check_fits(m, double(m.peak_bytes() - 1), "ddp"); },
                                {"plan ddp", "W_fwd", "W_bwd", "G ", "O ", "activations"});
  // frontier-mini's device has 64 GiB: a 20e9-element replicated model does not fit.
  const ShardLayout big({{"all", 20'000'000'000ull}}, mini(), PartitionPlan::preset("ddp", mini()));
  plan_test::expect_input_error([&] { check_fits_device(plan_memory(big), mini(), "ddp"); }, {"64.000 GiB"});
  const ShardLayout sharded({{"all", 20'000'000'000ull}}, mini(), PartitionPlan::preset("zero3", mini()));
  EXPECT_ANY_THROW(check_fits_device(plan_memory(sharded), mini(),
                                     "zero3"));  // one 20e9-element range: 80 GB of gather buffers
  // A topology without a device memory figure is not checked.
  EXPECT_NO_THROW(check_fits_device(plan_memory(big), plan_test::flat(2), "ddp"));
  EXPECT_NE(m.describe().find("peak"), std::string::npos);
}

}  // namespace
}  // namespace tz
