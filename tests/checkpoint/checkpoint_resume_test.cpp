// Resume: a run saved and resumed on the same world, topology and plan continues bitwise (every loss
// and every final weight identical, fp32 and bf16, quantized plans included) at 2, 3 and 8 ranks (the
// vocabulary of 61 divides none of them); a run saved on K ranks under plan P on topology T continues
// on K' ranks under P' on T' as an uninterrupted run at the new shape does (fp32, 1e-5 relative).
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint_test_util.hpp"

namespace tz {
namespace {

using test::RunSpec;
using test::Trial;
using test::TrialSpec;

struct NamedPlan {
  std::string name;
  std::function<PartitionPlan(const Topology&)> make;
};

std::vector<NamedPlan> presets() {
  std::vector<NamedPlan> out;
  for (const char* p : {"ddp", "zero1", "zero2", "zero3", "zeropp", "mics", "three-level"})
    out.push_back({p, [p](const Topology& t) { return PartitionPlan::preset(p, t); }});
  out.push_back({"hpz-only", [](const Topology& t) {
                   PartitionPlan p = PartitionPlan::preset("zeropp", t);
                   PlanOptions o = p.options();
                   o.qwz = o.qgz = false;
                   return p.with_options(o).with_name("zeropp-hpz-only");
                 }});
  return out;
}

void expect_bitwise_continuation(const Trial& whole, const Trial& second, int first_steps,
                                 const std::string& what) {
  ASSERT_EQ(whole.steps.size(), first_steps + second.steps.size()) << what;
  for (std::size_t i = 0; i < second.steps.size(); ++i) {
    const EngineStep& a = whole.steps[first_steps + i];
    const EngineStep& b = second.steps[i];
    EXPECT_EQ(a.step, b.step) << what;
    EXPECT_TRUE(test::same_bits(a.loss, b.loss))
        << what << " step " << a.step << ": loss " << a.loss << " uninterrupted vs " << b.loss << " resumed";
    EXPECT_EQ(a.grad_norm, b.grad_norm) << what << " step " << a.step;
    EXPECT_EQ(a.lr, b.lr) << what << " step " << a.step;
  }
  ASSERT_EQ(whole.params.size(), second.params.size()) << what;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < whole.params.size(); ++i)
    differ += !test::same_bits(whole.params[i], second.params[i]);
  EXPECT_EQ(differ, 0u) << what << ": final weights that differ";
}

class BitwiseResume : public ::testing::TestWithParam<int> {};

TEST_P(BitwiseResume, EveryPresetContinuesBitwiseInFp32AndBf16) {
  const int world = GetParam();
  for (const auto& plan : presets()) {
    for (DTypeMode mode : {DTypeMode::fp32, DTypeMode::bf16}) {
      const std::string what =
          fmt::format("{} {} at {} ranks", plan.name, mode == DTypeMode::fp32 ? "fp32" : "bf16", world);
      TrialSpec s;
      s.topo = test::topology_for_world(world);
      s.plan = plan.make;
      s.dtype = mode;
      s.run.grad_accum = 2;
      s.steps = 5;
      const Trial whole = test::run_trial(s);
      test::expect_no_errors(whole, what);

      s.steps = 2;  // "killed" after step 2's save
      s.save_dir = test::scratch_dir(fmt::format("{}_{}", plan.name, static_cast<int>(mode)));
      s.save_every = 2;
      const Trial first = test::run_trial(s);
      test::expect_no_errors(first, what);
      ASSERT_EQ(first.saved.size(), 1u) << what;

      s.steps = 5;
      s.resume = s.save_dir;
      s.save_dir.clear();
      const Trial second = test::run_trial(s);
      test::expect_no_errors(second, what);
      expect_bitwise_continuation(whole, second, 2, what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, BitwiseResume, ::testing::Values(2, 3, 8),
                         [](const auto& info) { return fmt::format("np{}", info.param); });

// Relative difference of losses of the same steps.
void expect_close_losses(const std::vector<EngineStep>& got, const std::vector<EngineStep>& want, int from,
                         const std::string& what) {
  ASSERT_GE(want.size(), from + got.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i].loss, b = want[from + i].loss;
    EXPECT_EQ(got[i].step, want[from + i].step) << what;
    EXPECT_LE(std::abs(a - b), 1e-5 * std::abs(b))
        << what << " step " << got[i].step << ": " << a << " vs " << b;
  }
}

TEST(ResumeElsewhere, EightRanksThreeLevelToThreeRanksZero3FlatToOneProcess) {
  // The global batch stays 24 sequences: 8 x 3, then 3 x 8, then 1 x 24.
  auto spec_at = [](int world, int micro, const char* plan, Topology topo) {
    TrialSpec s;
    s.topo = std::move(topo);
    s.plan = [plan](const Topology& t) { return PartitionPlan::preset(plan, t); };
    s.run.micro_batch = micro;
    s.steps = 7;
    (void)world;
    return s;
  };
  const TrialSpec s8 = spec_at(8, 3, "three-level", test::three_tier(2, 2, 2));
  const TrialSpec s3 = spec_at(3, 8, "zero3", Topology::load("flat").resolve(3));
  const TrialSpec s1 = spec_at(1, 24, "zero3", Topology::load("flat").resolve(1));
  const Trial whole3 = test::run_trial(s3), whole1 = test::run_trial(s1);
  test::expect_no_errors(whole3, "uninterrupted 3 ranks");
  test::expect_no_errors(whole1, "uninterrupted 1 process");

  const std::string dir = test::scratch_dir("run");
  TrialSpec a = s8;
  a.steps = 3;
  a.save_dir = dir;
  a.save_every = 3;
  const Trial t8 = test::run_trial(a);
  test::expect_no_errors(t8, "8 ranks");
  {  // The cursor saved is one global position: 3 steps x 24 sequences, whoever wrote it.
    const nlohmann::json m = nlohmann::json::parse(read_small_file(dir + "/step_3/manifest.json"));
    EXPECT_EQ(m["data"]["position"], 72u);
    EXPECT_EQ(m["world_size"], 8);
  }

  TrialSpec b = s3;
  b.steps = 5;
  b.resume = dir;
  b.save_dir = dir;
  b.save_every = 5;
  const Trial t3 = test::run_trial(b);
  test::expect_no_errors(t3, "8 -> 3 ranks");
  ASSERT_EQ(t3.steps.size(), 2u);
  expect_close_losses(t3.steps, whole3.steps, 3, "resumed on 3 ranks zero3 flat");
  bool noted_world = false;
  for (const auto& n : t3.notes) noted_world = noted_world || n == "world size: 8 -> 3";
  EXPECT_TRUE(noted_world) << "the resume notes say the world size changed";

  TrialSpec c = s1;
  c.resume = dir;  // its latest: step_5, written by 3 ranks
  const Trial t1 = test::run_trial(c);
  test::expect_no_errors(t1, "3 -> 1 process");
  ASSERT_EQ(t1.steps.size(), 2u);
  expect_close_losses(t1.steps, whole1.steps, 5, "resumed on 1 process");
  EXPECT_LE(test::normalized_error(t1.params, whole1.params), 1e-5);
}

TEST(ResumeElsewhere, ADataCursorContinuesTheGlobalStreamAtAnotherWorldSize) {
  // 2 ranks x 3 sequences for 2 steps, then 3 ranks x 2: the windows of steps 3.. are those an
  // uninterrupted run of either shape takes (the stream is global), so no window repeats or is skipped.
  const auto& tokens = test::trial_tokens();
  DataLoader two_a(tokens, 3, 8, 0, 2, 99), two_b(tokens, 3, 8, 1, 2, 99);
  std::vector<std::int32_t> in(3 * 8), tg(3 * 8);
  for (int s = 0; s < 2; ++s) {
    two_a.next(in.data(), tg.data());
    two_b.next(in.data(), tg.data());
  }
  const DataCursor cursor = two_a.cursor();
  EXPECT_EQ(cursor, two_b.cursor());
  EXPECT_EQ(cursor.position, 12u);
  DataLoader one = DataLoader::union_of_ranks(tokens, 2, 8, 3, 99);
  for (int r = 0; r < 3; ++r) {
    DataLoader three(tokens, 2, 8, r, 3, 99);
    three.restore(cursor);
    for (std::uint64_t k = 0; k < 2; ++k)
      EXPECT_EQ(three.window_at(12 + r * 2 + k), one.window_at(12 + r * 2 + k));
    EXPECT_EQ(three.cursor().position, 12u);
  }
}

TEST(ResumeElsewhere, ASkippedStepsCounterAndTheScheduleResume) {
  // A NaN skips step 1 (0-based); the counter travels with the checkpoint, so the schedule and Adam's
  // step count continue as in the uninterrupted run.
  TrialSpec s;
  s.topo = test::topology_for_world(3);
  s.inject_nan_step = 1;
  s.inject_nan_rank = 2;
  s.steps = 5;
  const Trial whole = test::run_trial(s);
  test::expect_no_errors(whole, "uninterrupted");
  ASSERT_TRUE(whole.steps[1].skipped);
  s.steps = 3;
  s.save_dir = test::scratch_dir("nan");
  s.save_every = 3;
  const Trial first = test::run_trial(s);
  ASSERT_EQ(first.saved.size(), 1u);
  s.steps = 5;
  s.resume = s.save_dir;
  s.save_dir.clear();
  s.inject_nan_step = -1;
  const Trial second = test::run_trial(s);
  test::expect_no_errors(second, "resumed");
  expect_bitwise_continuation(whole, second, 3, "skipped step before the save");
}

}  // namespace
}  // namespace tz
