// The ranks on this host under Slurm's srun: SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID, in every
// form srun writes it ("4", "2(x3)", "3,1", "2(x2),1(x3)"), and nothing (0) for what it never writes.
#include <gtest/gtest.h>

#include "cli/run_world.hpp"

namespace tz::cli {
namespace {

TEST(SlurmStepTasks, EveryFormSrunWrites) {
  EXPECT_EQ(slurm_step_tasks_on_node("4", "0"), 4);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x3)", "0"), 2);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x3)", "2"), 2);
  EXPECT_EQ(slurm_step_tasks_on_node("3,1", "0"), 3);
  EXPECT_EQ(slurm_step_tasks_on_node("3,1", "1"), 1);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x2),1(x3)", "1"), 2);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x2),1(x3)", "2"), 1);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x2),1(x3)", "4"), 1);
  EXPECT_EQ(slurm_step_tasks_on_node("8(x48)", "47"), 8);
}

TEST(SlurmStepTasks, MissingOrUnreadableIsZero) {
  EXPECT_EQ(slurm_step_tasks_on_node(nullptr, "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("4", nullptr), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x3)", "3"), 0);  // past the step's nodes
  EXPECT_EQ(slurm_step_tasks_on_node("", "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("4", "x"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("4", "-1"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("0", "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("2(3)", "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x)", "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("2(x3", "0"), 0);
  EXPECT_EQ(slurm_step_tasks_on_node("2;1", "1"), 0);
}

}  // namespace
}  // namespace tz::cli
