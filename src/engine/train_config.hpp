// Training configuration: DeepSpeed-style JSON (the keys users already write) plus tierzero's own
// "tierzero" section for tier placement. Parsed once into this plain struct; unknown keys anywhere are
// errors that name the key (DESIGN section 6).
//
// DeepSpeed keys read:
//   train_micro_batch_size_per_gpu, gradient_accumulation_steps, train_batch_size (checked if given),
//   gradient_clipping, steps_per_print, seed,
//   optimizer {type: "AdamW" | "Adam", params: {lr, betas, eps, weight_decay}},
//   scheduler {type: "WarmupCosineLR" | "WarmupDecayLR" | "WarmupLR",
//              params: {warmup_num_steps, total_num_steps, warmup_min_ratio, cos_min_ratio, warmup_max_lr}},
//   bf16 {enabled}, fp16 {enabled: false only},
//   zero_optimization {stage, zero_hpz_partition_size, zero_quantized_weights, zero_quantized_gradients,
//                      mics_shard_size, overlap_comm, contiguous_gradients, reduce_scatter}
// tierzero keys:
//   tierzero {plan: preset name, W_fwd, W_bwd, G, O: tier name or "replicated", prefetch_depth,
//             quant_block_size, max_nonfinite_steps, train_steps, sequence_length, activation_recompute,
//             qwz, qgz, hpz, collectives}
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace tz {

struct OptimizerConfig {
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

struct ScheduleConfig {
  int warmup_steps = 0;
  int total_steps = 0;        // 0: the number of training steps
  double min_lr_ratio = 0.1;  // cosine floor, as a fraction of the peak lr
};

// Where each model state lives, as written by the user (tier names or "replicated"); empty = from the
// preset. Resolved against a topology by the plan.
struct PlacementOverrides {
  std::string w_fwd, w_bwd, g, o;
};

struct TrainConfig {
  int micro_batch = 4;              // sequences per rank per micro-batch
  int grad_accum = 1;               // micro-batches per step
  std::optional<int> global_batch;  // train_batch_size, if the user gave it (checked against the world)
  int seq_len = 0;                  // 0: the model's n_positions
  int train_steps = 100;
  int steps_per_print = 1;
  std::uint64_t seed = 1234;
  double grad_clip = 1.0;  // 0: no clipping
  OptimizerConfig adamw;
  ScheduleConfig schedule;
  bool bf16 = true;  // weights travel in bf16; false = fp32 everywhere (exactness tests)

  // Plan: DeepSpeed's zero_optimization mapped to a preset, or tierzero.plan naming one.
  std::string plan = "zero3";
  int hpz_partition_size = 0;    // zero_hpz_partition_size (> 1: W_bwd on the domain of that size)
  int mics_shard_size = 0;       // mics_shard_size (> 0: all states on the domain of that size)
  std::optional<bool> qwz, qgz;  // unset: the preset's choice (zeropp turns both on)
  std::optional<bool> hpz;       // unset: the preset's choice; DeepSpeed configs: partition size > 1
  PlacementOverrides placement;
  std::string
      collectives;  // "hierarchical" | "flat" (one ring per group, as DeepSpeed runs); "" = the plan's
  int prefetch_depth = 1;
  int quant_block_size = 0;     // 0: the quantizer's default
  int max_nonfinite_steps = 3;  // skipped steps tolerated before all ranks stop together
  bool activation_recompute = false;

  static TrainConfig from_json(const nlohmann::json& doc, const std::string& origin);
  static TrainConfig load(const std::string& path);
  nlohmann::json to_json() const;
};

}  // namespace tz
