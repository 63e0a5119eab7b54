// The engine's CPU time by term (EngineStep::cpu): over a run of ranks on threads of this process,
// the terms of every rank and step add up to no more than the process's CPU time and to at least
// the CPU time the ranks' own threads spent in step(); each term is non-zero exactly where the plan
// has that work (quantization with qwZ/qgZ only, narrowing in bf16 only, packing with hpZ).
#include <gtest/gtest.h>
#include <time.h>

#include <mutex>

#include "comm/thread_world.hpp"
#include "core/cpu_terms.hpp"
#include "engine_test_util.hpp"
#include "plan/partition_plan.hpp"

namespace tz {
namespace {

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct TermRun {
  CpuTermSeconds summed;           // over ranks and steps
  double ranks_step_thread_s = 0;  // the ranks' own threads' CPU time inside step()
  double process_s = 0;
  int steps = 0;
};

TermRun run_terms(const Topology& topo, const PartitionPlan& plan, int steps) {
  const GptConfig config = test::tiny_gpt();
  const auto tokens = test::synthetic_tokens(4000, config.vocab_size);
  const EngineOptions opts = test::engine_options({});
  TermRun out;
  std::mutex mu;
  const double p0 = process_cpu_s();
  run_thread_mesh(topo, [&](Mesh& mesh) {
    ShardedEngine engine(mesh, config, plan, opts);
    DataLoader loader(tokens, plan.options().micro_batch_size, opts.seq, mesh.world().rank(),
                      mesh.world().size(), 5);
    CpuTermSeconds mine;
    double thread_s = 0;
    for (int s = 0; s < steps; ++s) {
      const std::int64_t t0 = thread_cpu_ns();
      const EngineStep st = engine.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); });
      thread_s += 1e-9 * static_cast<double>(thread_cpu_ns() - t0);
      for (int t = 0; t < kCpuTermCount; ++t) {
        EXPECT_GE(st.cpu.cpu_s[t], 0.0) << cpu_term_name(static_cast<CpuTerm>(t)) << " step " << s;
        mine.cpu_s[t] += st.cpu.cpu_s[t];
      }
      EXPECT_GE(st.cpu.wait_wall_s, st.cpu[CpuTerm::collective_wait]) << "step " << s;
      mine.wait_wall_s += st.cpu.wait_wall_s;
    }
    engine.settle();
    std::lock_guard lock(mu);
    for (int t = 0; t < kCpuTermCount; ++t) out.summed.cpu_s[t] += mine.cpu_s[t];
    out.summed.wait_wall_s += mine.wait_wall_s;
    out.ranks_step_thread_s += thread_s;
  });
  out.process_s = process_cpu_s() - p0;
  out.steps = steps;
  return out;
}

PartitionPlan small_plan(const std::string& name, const Topology& topo, DTypeMode mode) {
  PartitionPlan p = PartitionPlan::preset(name, topo);
  PlanOptions o = p.options();
  o.micro_batch_size = 2;
  o.dtype_mode = mode;
  o.quant_block = 32;  // small blocks, so the tiny model's ranges take the quantized paths
  return p.with_options(o);
}

void expect_adds_up(const TermRun& r, const std::string& what) {
  const CpuTermSeconds& s = r.summed;
  // No moment counted twice: everything charged happened in this process.
  EXPECT_LE(s.total_cpu_s(), r.process_s) << what;
  // Every moment of the ranks' threads inside step() is charged (the last interval of each step
  // lands in the next one: a few clock reads, well inside 1%).
  EXPECT_GE(s.total_cpu_s(), 0.99 * r.ranks_step_thread_s) << what;
  EXPECT_GT(s[CpuTerm::model], 0.0) << what;
  EXPECT_GT(s[CpuTerm::optimizer], 0.0) << what;
  EXPECT_GT(s[CpuTerm::other], 0.0) << what;
  EXPECT_GT(s[CpuTerm::collective_copies], 0.0) << what;  // the scalars at least
  EXPECT_GT(s.wait_wall_s, 0.0) << what;
}

TEST(EngineCpuTerms, Fp32DdpHasNoQuantizationNarrowingOrAccumulation) {
  const Topology topo = test::topology_for_world(4);
  const TermRun r = run_terms(topo, small_plan("ddp", topo, DTypeMode::fp32), 3);
  expect_adds_up(r, "ddp fp32");
  EXPECT_EQ(r.summed[CpuTerm::quantization], 0.0);
  EXPECT_EQ(r.summed[CpuTerm::narrowing], 0.0);
  EXPECT_EQ(r.summed[CpuTerm::grad_accumulate], 0.0);  // replicated G: accumulated in place
  EXPECT_GT(r.summed[CpuTerm::packing], 0.0);          // the refresh copies the master weights
}

TEST(EngineCpuTerms, Bf16Zero3NarrowsAndAccumulatesButDoesNotQuantize) {
  const Topology topo = test::topology_for_world(4);
  const TermRun r = run_terms(topo, small_plan("zero3", topo, DTypeMode::bf16), 3);
  expect_adds_up(r, "zero3 bf16");
  EXPECT_EQ(r.summed[CpuTerm::quantization], 0.0);
  EXPECT_GT(r.summed[CpuTerm::narrowing], 0.0);
  EXPECT_GT(r.summed[CpuTerm::grad_accumulate], 0.0);
}

TEST(EngineCpuTerms, ZeroppQuantizesAndPacksItsSecondaryShard) {
  const Topology topo = test::topology_for_world(4);
  const PartitionPlan plan = small_plan("zeropp", topo, DTypeMode::bf16);
  ASSERT_TRUE(plan.options().qwz && plan.options().qgz && plan.has_secondary_weights());
  const TermRun r = run_terms(topo, plan, 3);
  expect_adds_up(r, "zeropp");
  EXPECT_GT(r.summed[CpuTerm::quantization], 0.0);
  EXPECT_GT(r.summed[CpuTerm::narrowing], 0.0);
  EXPECT_GT(r.summed[CpuTerm::packing], 0.0);
}

}  // namespace
}  // namespace tz
