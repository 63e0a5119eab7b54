#include "train/train_config.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tz {
namespace {

std::string error_of(const std::string& text) {
  try {
    TrainConfig::from_json(nlohmann::json::parse(text), "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, ReadsDeepSpeedKeys) {
  auto cfg = TrainConfig::from_json(nlohmann::json::parse(R"({
    "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 2, "gradient_clipping": 0.5,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.8, 0.9], "eps": 1e-6, "weight_decay": 0.05}},
    "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 10, "total_num_steps": 100, "cos_min_ratio": 0.2}},
    "bf16": {"enabled": false},
    "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8, "zero_quantized_weights": true,
                          "zero_quantized_gradients": true}})"),
                                    "c.json");
  EXPECT_EQ(cfg.micro_batch, 3);
  EXPECT_EQ(cfg.grad_accum, 2);
  EXPECT_DOUBLE_EQ(cfg.grad_clip, 0.5);
  EXPECT_DOUBLE_EQ(cfg.adamw.lr, 1e-3);
  EXPECT_DOUBLE_EQ(cfg.adamw.beta1, 0.8);
  EXPECT_DOUBLE_EQ(cfg.adamw.beta2, 0.9);
  EXPECT_EQ(cfg.schedule.warmup_steps, 10);
  EXPECT_EQ(cfg.schedule.type, "WarmupCosineLR");
  EXPECT_EQ(cfg.schedule.total_steps, 100);
  EXPECT_DOUBLE_EQ(cfg.schedule.cos_min_ratio, 0.2);
  EXPECT_FALSE(cfg.bf16);
  EXPECT_EQ(cfg.plan, "zeropp");
  EXPECT_EQ(cfg.hpz_partition_size, 8);
  EXPECT_TRUE(cfg.qwz.value() && cfg.qgz.value() && cfg.hpz.value());
}

TEST(TrainConfig, StagesMapToPresetsAndTierzeroKeysOverride) {
  for (auto [stage, plan] : {std::pair{0, "ddp"}, {1, "zero1"}, {2, "zero2"}, {3, "zero3"}}) {
    auto j = nlohmann::json{{"zero_optimization", {{"stage", stage}}}};
    EXPECT_EQ(TrainConfig::from_json(j, "c").plan, plan);
  }
  auto cfg = TrainConfig::from_json(nlohmann::json::parse(R"({"zero_optimization": {"stage": 3},
    "tierzero": {"plan": "three-level", "G": "system", "prefetch_depth": 2}})"),
                                    "c");
  EXPECT_EQ(cfg.plan, "three-level");
  EXPECT_EQ(cfg.placement.g, "system");
  EXPECT_EQ(cfg.prefetch_depth, 2);
  EXPECT_EQ(
      TrainConfig::from_json(nlohmann::json::parse(R"({"zero_optimization": {"mics_shard_size": 4}})"), "c")
          .plan,
      "mics");
}

TEST(TrainConfig, RoundTripsThroughJson) {
  auto cfg = TrainConfig::from_json(nlohmann::json::parse(R"({"train_micro_batch_size_per_gpu": 5,
    "tierzero": {"plan": "three-level", "W_bwd": "gcd", "train_steps": 7, "collectives": "flat"}})"),
                                    "c");
  auto again = TrainConfig::from_json(cfg.to_json(), "again");
  EXPECT_EQ(again.to_json(), cfg.to_json());
  EXPECT_EQ(again.micro_batch, 5);
  EXPECT_EQ(again.placement.w_bwd, "gcd");
  EXPECT_EQ(again.train_steps, 7);
  EXPECT_EQ(again.collectives, "flat");
}

TEST(TrainConfig, BadInputNamesTheKey) {
  EXPECT_NE(error_of(R"({"train_micro_batch_size": 4})").find("unknown key 'train_micro_batch_size'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})")
                .find("offload_param"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"zero_optimization": {"stage": 5}})").find("stage"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"zero_optimization": {"stage": 2, "zero_quantized_weights": true}})").find("must be 3"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"gradient_accumulation_steps": 0})").find("gradient_accumulation_steps"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"params": {"betas": [0.9]}}})").find("betas"), std::string::npos);
  EXPECT_NE(error_of(R"({"fp16": {"enabled": true}})").find("fp16"), std::string::npos);
  EXPECT_NE(error_of(R"({"tierzero": {"W_fwd": ""}})").find("W_fwd"), std::string::npos);
  EXPECT_NE(error_of(R"({"train_micro_batch_size_per_gpu": "4"})").find("must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"tierzero": {"prefetch": 1}})").find("unknown key 'prefetch'"), std::string::npos);
}

}  // namespace
}  // namespace tz
