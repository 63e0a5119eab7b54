// Shared fixtures of the checkpoint tests: a training run on ranks as threads that can save, resume,
// import, and report every rank's steps, final weights and error messages; scratch directories.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/weight_import.hpp"
#include "comm/thread_world.hpp"
#include "engine/engine_test_util.hpp"
#include "train/train_session.hpp"

namespace tz::test {

// A fresh directory under the test's temporary folder.
inline std::string scratch_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : test)
    if (c == '/') c = '_';
  const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / "tz_ckpt" / test / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

struct TrialSpec {
  Topology topo = Topology::load("flat").resolve(1);
  std::function<PartitionPlan(const Topology&)> plan;  // default: the config's (zero3)
  RunSpec run;
  DTypeMode dtype = DTypeMode::fp32;
  int steps = 6;  // total to reach
  std::string save_dir;
  int save_every = 0;
  int keep = 0;
  std::string resume;
  std::string init_from;
  int inject_nan_step = -1, inject_nan_rank = 0;
  GptConfig model = tiny_gpt();
};

struct Trial {
  std::vector<EngineStep> steps;    // rank 0's steps of this trial (after a resume: the later ones)
  std::vector<float> params;        // the final master weights, gathered
  std::vector<std::string> saved;   // paths, in order
  std::vector<std::string> notes;   // resume notes
  std::vector<std::string> errors;  // per rank: the message of what it threw (empty: nothing)
};

inline const std::vector<std::int32_t>& trial_tokens() {
  static const auto tokens = synthetic_tokens(4000, tiny_gpt().vocab_size);
  return tokens;
}

// Runs one trial on spec.topo's world; a rank's exception is recorded in `errors`, not rethrown.
inline Trial run_trial(const TrialSpec& spec) {
  Trial out;
  const int world = spec.topo.world_size();
  out.errors.resize(world);
  std::mutex mu;
  TrainConfig config = train_config(spec.run);
  config.train_steps = spec.steps;
  config.bf16 = spec.dtype == DTypeMode::bf16;
  config.save_dir = spec.save_dir;
  config.save_every = spec.save_every;
  config.keep = spec.keep;
  CommOptions comm;
  comm.timeout_s = 60;  // a rank left waiting by a bug fails the test instead of hanging it
  run_thread_mesh(
      spec.topo,
      [&](Mesh& mesh) {
        const int rank = mesh.world().rank();
        try {
          TrainRun run = make_train_run(config, spec.model, spec.topo, world);
          if (spec.plan) {
            PlanOptions o = spec.plan(spec.topo).options();
            PlanOptions ro = run.plan.options();
            o.dtype_mode = ro.dtype_mode;
            o.micro_batch_size = ro.micro_batch_size;
            o.grad_accum_steps = ro.grad_accum_steps;
            run.plan = spec.plan(spec.topo).with_options(o);
          }
          run.engine.inject_nan_step = spec.inject_nan_step;
          run.engine.inject_nan_rank = spec.inject_nan_rank;
          ShardedEngine engine(mesh, spec.model, run.plan, run.engine);
          DataLoader loader(trial_tokens(), run.micro_batch, run.engine.seq, rank, world, run.engine.seed);
          std::vector<std::string> notes;
          if (!spec.resume.empty())
            notes = resume_run(mesh, engine, loader, spec.resume, config, run, 60).notes;
          if (!spec.init_from.empty())
            import_weights(mesh.world(), engine, spec.init_from, {.io_timeout_s = 60});
          std::vector<std::string> saved;
          SaveOptions save;
          save.dir = run.save.dir;
          save.keep = run.save.keep;
          save.io_timeout_s = 60;
          Checkpointing ck{.world = &mesh.world(),
                           .save = save,
                           .every = run.save.every,
                           .meta = checkpoint_meta(config, spec.topo, run),
                           .cursor = [&] { return loader.cursor(); },
                           .on_save = [&](const SaveResult& s) { saved.push_back(s.path); }};
          std::vector<EngineStep> steps;
          for (const TrainStep& st :
               run_training(mesh, engine, run, [&](std::int32_t*in, std::int32_t*tg) { loader.next(in, tg); },
                            {.checkpointing = run.save.dir.empty() ? nullptr : &ck}))
            steps.push_back(st.engine);
          std::vector<float> params = engine.gather_master_params();
          if (rank == 0) {
            std::lock_guard lock(mu);
            out.steps = std::move(steps);
            out.params = std::move(params);
            out.saved = std::move(saved);
            out.notes = std::move(notes);
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          out.errors[rank] = e.what();
        }
      },
      comm);
  return out;
}

inline void expect_no_errors(const Trial& t, const std::string& what) {
  for (std::size_t r = 0; r < t.errors.size(); ++r) EXPECT_EQ(t.errors[r], "") << what << ": rank " << r;
}

// Every rank stopped with the same one message; returns it.
inline std::string common_error(const Trial& t, const std::string& what) {
  EXPECT_FALSE(t.errors.empty());
  for (std::size_t r = 0; r < t.errors.size(); ++r) {
    EXPECT_NE(t.errors[r], "") << what << ": rank " << r << " did not fail";
    EXPECT_EQ(t.errors[r], t.errors[0]) << what << ": rank " << r << " failed differently";
  }
  return t.errors.empty() ? "" : t.errors[0];
}

inline bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace tz::test
