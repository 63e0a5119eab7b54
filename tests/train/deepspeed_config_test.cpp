// DeepSpeed configs read honestly: each key honoured, mapped, accepted as unused (and listed), or an
// error that says why; the schedules and Adam modes as DeepSpeed defines them; the defaults of a
// config that leaves keys out are TrainConfig's, the ones `train --help` shows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.hpp"
#include "support/expect_input_error.hpp"
#include "topology/topology.hpp"
#include "train/train_config.hpp"
#include "train/train_run.hpp"

namespace tz {
namespace {

using test::expect_input_error;

TrainConfig read(const std::string& text) {
  return TrainConfig::from_json(nlohmann::json::parse(text), "c.json");
}

bool lists(const std::vector<std::string>& v, const std::string& key) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(key, 0) == 0; });
}

TEST(DeepSpeedConfig, MissingKeysTakeTheDefaultsTheCliShows) {
  const TrainConfig d;
  EXPECT_EQ(d.micro_batch, 8);
  EXPECT_EQ(d.train_steps, 300);
  EXPECT_DOUBLE_EQ(d.adamw.lr, 1e-3);
  EXPECT_EQ(d.schedule.warmup_steps, 20);
  EXPECT_EQ(d.steps_per_print, 10);
  const TrainConfig empty = read("{}");
  EXPECT_EQ(empty.to_json(), d.to_json());
  // A config with other keys but none of these: still the same values.
  const TrainConfig some = read(R"({"gradient_clipping": 0.5, "zero_optimization": {"stage": 2}})");
  EXPECT_EQ(some.micro_batch, d.micro_batch);
  EXPECT_EQ(some.train_steps, d.train_steps);
  EXPECT_DOUBLE_EQ(some.adamw.lr, d.adamw.lr);
  EXPECT_EQ(some.schedule.warmup_steps, d.schedule.warmup_steps);
  EXPECT_EQ(some.steps_per_print, d.steps_per_print);
}

TEST(DeepSpeedConfig, MachineryKeysAreAcceptedAndListedAsUnused) {
  const TrainConfig c = read(R"({
    "wall_clock_breakdown": false, "prescale_gradients": false, "zero_allow_untested_optimizer": true,
    "fp16": {"enabled": false, "loss_scale": 0},
    "bf16": {"enabled": true}, "communication_data_type": "bf16",
    "zero_optimization": {"stage": 3, "overlap_comm": true, "contiguous_gradients": true,
                          "reduce_bucket_size": 5e8, "stage3_param_persistence_threshold": "auto",
                          "stage3_max_live_parameters": 1e9, "sub_group_size": 1e9,
                          "offload_optimizer": {"device": "none"}},
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "torch_adam": true}}})");
  for (const char* k :
       {"wall_clock_breakdown", "prescale_gradients", "zero_allow_untested_optimizer", "fp16",
        "communication_data_type", "zero_optimization.overlap_comm", "zero_optimization.contiguous_gradients",
        "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_param_persistence_threshold",
        "zero_optimization.stage3_max_live_parameters", "zero_optimization.sub_group_size",
        "zero_optimization.offload_optimizer", "optimizer.params.torch_adam"})
    EXPECT_TRUE(lists(c.unused_keys, k)) << k;
  EXPECT_DOUBLE_EQ(c.adamw.lr, 2e-3);
  EXPECT_EQ(c.plan, "zero3");
}

TEST(DeepSpeedConfig, KeysWithATierzeroEquivalentAreMapped) {
  const TrainConfig c = read(R"({"zero_optimization": {"stage": 3, "mics_shard_size": 4,
      "mics_hierarchical_params_gather": false, "stage3_prefetch_bucket_size": 5e7}})");
  EXPECT_EQ(c.collectives, "flat");
  ASSERT_TRUE(c.prefetch_elements.has_value());
  EXPECT_EQ(*c.prefetch_elements, 50000000);
  EXPECT_EQ(c.mapped_keys.size(), 2u);
  // The prefetch depth the elements stand for: ranges of the model that fit, at most all but one.
  const GptConfig tiny{.n_layer = 4, .n_embd = 32, .n_head = 4, .n_positions = 16, .vocab_size = 64};
  EXPECT_EQ(prefetch_depth_for(0, tiny), 0);
  EXPECT_EQ(prefetch_depth_for(50000000, tiny), 5);  // L + 2 ranges, one computing
  const ParameterLayout l(tiny);
  EXPECT_EQ(prefetch_depth_for(static_cast<long long>(2 * l.max_range_numel()), tiny), 2);
  expect_input_error(
      [] {
        read(
            R"({"zero_optimization": {"stage3_prefetch_bucket_size": 10}, "tierzero": {"prefetch_depth": 1}})");
      },
      {"prefetch_depth", "stage3_prefetch_bucket_size"});
}

TEST(DeepSpeedConfig, AutoValuesTakeTierzerosDefaults) {
  // As Hugging Face's Trainer writes them.
  const TrainConfig c = read(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                  "warmup_num_steps": "auto", "total_num_steps": "auto"}},
    "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})");
  const TrainConfig d;
  EXPECT_EQ(c.micro_batch, d.micro_batch);
  EXPECT_FALSE(c.global_batch.has_value());
  EXPECT_DOUBLE_EQ(c.grad_clip, d.grad_clip);
  EXPECT_DOUBLE_EQ(c.adamw.lr, d.adamw.lr);
  EXPECT_EQ(c.schedule.type, "WarmupDecayLR");
  EXPECT_EQ(c.schedule.warmup_steps, d.schedule.warmup_steps);
  EXPECT_DOUBLE_EQ(c.schedule.warmup_max_lr.value(), d.adamw.lr);
  EXPECT_EQ(c.schedule.total_steps, 0);  // the training steps
  EXPECT_TRUE(c.bf16);
}

TEST(DeepSpeedConfig, UnsupportedValuesAreErrorsThatSayWhy) {
  struct Case {
    const char* text;
    std::vector<std::string> fragments;
  };
  const Case cases[] = {
      {R"({"fp16": {"enabled": true}})", {"fp16", "enabled", "bf16"}},
      {R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"}}})",
       {"offload_optimizer", "device", "offload"}},
      {R"({"zero_optimization": {"offload_param": {"device": "nvme"}}})", {"offload_param", "nvme"}},
      {R"({"zero_optimization": {"cpu_offload": true}})", {"cpu_offload"}},
      {R"({"zero_optimization": {"zeropp_loco_param": {"err_beta": 0.8}}})", {"zeropp_loco_param", "LoCo"}},
      {R"({"optimizer": {"type": "Lamb"}})", {"type", "Lamb", "Adam"}},
      {R"({"optimizer": {"type": "AdamW", "params": {"adam_w_mode": false}}})", {"adam_w_mode", "Adam"}},
      {R"({"optimizer": {"type": "Adam", "params": {"amsgrad": true}}})", {"amsgrad"}},
      {R"({"optimizer": {"type": "Adam", "params": {"max_grad_norm": 1.0}}})",
       {"max_grad_norm", "gradient_clipping"}},
      {R"({"optimizer": {"type": "Adam", "params": {"bias_correction": false}}})", {"bias_correction"}},
      {R"({"scheduler": {"type": "OneCycle"}})", {"OneCycle"}},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 10}}})",
       {"total_num_steps", "WarmupLR"}},
      {R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_max_lr": 1e-3}}})", {"warmup_max_lr"}},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}})",
       {"warmup_type", "cosine"}},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"last_batch_iteration": 7}}})",
       {"last_batch_iteration", "7"}},
      {R"({"sparse_gradients": true})", {"sparse_gradients"}},
      {R"({"amp": {"enabled": true}})", {"amp"}},
      {R"({"elasticity": {"enabled": true}})", {"elasticity"}},
      {R"({"compression_training": {}})", {"compression_training"}},
      {R"({"data_types": {"grad_accum_dtype": "bf16"}})", {"grad_accum_dtype", "fp32"}},
      {R"({"bf16": {"enabled": true}, "communication_data_type": "fp16"})",
       {"communication_data_type", "fp16"}},
      {R"({"scheduler": {"type": "WarmupLR"}, "tierzero": {"lr_schedule": {}}})",
       {"scheduler", "lr_schedule"}},
      {R"({"no_such_key": 1})", {"unknown key 'no_such_key'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      read(c.text);
      ADD_FAILURE() << "no error for " << c.text;
    } catch (const InputError& e) {
      for (const auto& f : c.fragments)
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

TEST(DeepSpeedConfig, AdamModes) {
  EXPECT_TRUE(read(R"({"optimizer": {"type": "AdamW"}})").adamw.decoupled_weight_decay);
  EXPECT_TRUE(
      read(R"({"optimizer": {"type": "Adam"}})").adamw.decoupled_weight_decay);  // adam_w_mode default
  EXPECT_TRUE(read(R"({"optimizer": {"type": "adam", "params": {"adam_w_mode": true}}})")
                  .adamw.decoupled_weight_decay);
  const TrainConfig l2 = read(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})");
  EXPECT_FALSE(l2.adamw.decoupled_weight_decay);
  const TrainRun run =
      make_train_run(l2, {.n_layer = 1, .n_embd = 8, .n_head = 2, .n_positions = 8, .vocab_size = 16},
                     Topology::load("flat").resolve(1), 1);
  EXPECT_FALSE(run.engine.adamw.decoupled);
  EXPECT_EQ(TrainConfig::from_json(l2.to_json(), "again").adamw.decoupled_weight_decay, false);
}

TEST(DeepSpeedConfig, SchedulesReachTheEngineAsDeepSpeedDefinesThem) {
  const GptConfig m{.n_layer = 1, .n_embd = 8, .n_head = 2, .n_positions = 8, .vocab_size = 16};
  const Topology flat = Topology::load("flat").resolve(1);
  // DeepSpeed's defaults when a type is named without params: 1000 log warmup steps, cos_min_ratio 1e-4.
  const TrainConfig dflt =
      read(R"({"scheduler": {"type": "WarmupCosineLR"}, "tierzero": {"train_steps": 5000}})");
  EXPECT_EQ(dflt.schedule.warmup_steps, 1000);
  EXPECT_EQ(dflt.schedule.warmup_type, "log");
  EXPECT_DOUBLE_EQ(dflt.schedule.cos_min_ratio, 1e-4);
  const TrainRun r = make_train_run(dflt, m, flat, 1);
  EXPECT_EQ(r.engine.schedule.kind, LrScheduleKind::warmup_cosine);
  EXPECT_EQ(r.engine.schedule.decay_steps, 5000);
  EXPECT_FLOAT_EQ(r.engine.schedule.max_lr, float(dflt.adamw.lr));
  // WarmupLR takes its peak from warmup_max_lr (default 0.001), not the optimizer's lr.
  const TrainConfig w = read(R"({"optimizer": {"params": {"lr": 0.5}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-5, "warmup_num_steps": 10, "warmup_type": "linear"}}})");
  const TrainRun rw = make_train_run(w, m, flat, 1);
  EXPECT_FLOAT_EQ(rw.engine.schedule.max_lr, 1e-3f);
  EXPECT_FLOAT_EQ(rw.engine.schedule.min_lr, 1e-5f);
  EXPECT_EQ(rw.engine.schedule.warmup_type, WarmupType::linear);
  EXPECT_TRUE(lists(w.unused_keys, "optimizer.params.lr"));
  // WarmupCosineLR cannot have total_num_steps at or below its warmup (DeepSpeed divides by the difference).
  const TrainConfig bad = read(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 10,
      "total_num_steps": 10}}})");
  expect_input_error([&] { make_train_run(bad, m, flat, 1); }, {"total_num_steps", "warmup_num_steps"});
  // Every type writes back to a config that reads to the same thing.
  for (const char* text :
       {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.01}}})",
        R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 50}}})",
        R"({"scheduler": {"type": "WarmupCosineLR", "params": {"warmup_min_ratio": 0.1}}})",
        R"({"tierzero": {"lr_schedule": {"warmup_steps": 7, "min_lr_ratio": 0.2}}})"}) {
    const TrainConfig c = read(text);
    EXPECT_EQ(TrainConfig::from_json(c.to_json(), "again").to_json(), c.to_json()) << text;
  }
}

}  // namespace
}  // namespace tz
