// Training configuration: DeepSpeed-style JSON (the keys users already write) plus tierzero's own
// "tierzero" section for tier placement. Parsed once into this plain struct; unknown keys anywhere are
// errors that name the key. docs/deepspeed.md lists every DeepSpeed key and what tierzero does with it.
//
// The defaults below are THE defaults: what runs with no --config, with a --config that leaves a key
// out, and what `tierzero train --help` shows (the CLI prints these values, it keeps none of its own).
//
// DeepSpeed keys read (train/deepspeed_sections.hpp reads the optimizer, scheduler, precision and
// zero_optimization sections):
//   train_micro_batch_size_per_gpu, gradient_accumulation_steps, train_batch_size (checked),
//   gradient_clipping, steps_per_print, seed,
//   optimizer {type: "AdamW" | "Adam", params: {lr, betas, eps, weight_decay, adam_w_mode, ...}},
//   scheduler {type: "WarmupLR" | "WarmupDecayLR" | "WarmupCosineLR", params: DeepSpeed's, exactly},
//   bf16 {enabled}, fp16 {enabled: false only},
//   zero_optimization {stage, zero_hpz_partition_size, zero_quantized_weights, zero_quantized_gradients,
//                      mics_shard_size, mics_hierarchical_params_gather, stage3_prefetch_bucket_size, ...}
//   and keys that only tune DeepSpeed's own machinery: accepted, listed in `unused_keys`.
// Numeric DeepSpeed keys may be "auto" (as Hugging Face's Trainer writes them): tierzero's default.
// tierzero keys:
//   tierzero {plan: preset name, "custom" (only the placements below) or "auto" (the planner
//             chooses: train/auto_plan.hpp), plan_name (the plan's name in logs), W_fwd, W_bwd, G, O: tier
//             name or "replicated", prefetch_depth, quant_block_size, max_nonfinite_steps, train_steps,
//             sequence_length, activation_recompute, qwz, qgz, hpz, collectives, save_dir,
//             save_every, keep, check_collectives, startup_timeout_s, flight_recorder,
//             lr_schedule {warmup_steps, decay_steps, min_lr_ratio}: tierzero's own schedule}
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tz {

struct OptimizerConfig {
  double lr = 1e-3;  // the optimizer's lr: the peak of "cosine" and WarmupCosineLR
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  // AdamW (decoupled decay). false: Adam with L2 regularisation (DeepSpeed "Adam" with adam_w_mode false).
  bool decoupled_weight_decay = true;
};

// The learning-rate schedule (optim/lr_schedule.hpp has the formulas). "cosine" is tierzero's own
// (nanoGPT's: linear warmup, cosine to a floor); the three DeepSpeed types follow DeepSpeed exactly,
// with DeepSpeed's defaults when a config names one.
struct ScheduleConfig {
  int warmup_steps = 20;                // warmup_num_steps for the DeepSpeed types
  int total_steps = 0;                  // decay_steps / total_num_steps; 0: the number of training steps
  double min_lr_ratio = 0.1;            // cosine: floor as a fraction of the peak lr
  std::string type = "cosine";          // "cosine", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"
  std::string warmup_type = "log";      // DeepSpeed types: "log" or "linear"
  double warmup_min_lr = 0;             // WarmupLR, WarmupDecayLR
  std::optional<double> warmup_max_lr;  // WarmupLR, WarmupDecayLR: the peak (unset: DeepSpeed's 0.001)
  double warmup_min_ratio = 0;          // WarmupCosineLR
  double cos_min_ratio = 1e-4;          // WarmupCosineLR
  bool deepspeed() const { return type != "cosine"; }
};

// Where each model state lives, as written by the user (tier names or "replicated"); empty = from the
// preset. Resolved against a topology by the plan.
struct PlacementOverrides {
  std::string w_fwd, w_bwd, g, o;
};

inline constexpr const char* kCustomPlan = "custom";  // tierzero.plan: no preset, the placements given
inline constexpr const char* kAutoPlan = "auto";      // tierzero.plan: the planner's best plan
constexpr double kMaxStartupTimeoutS = 86400;

struct TrainConfig {
  int micro_batch = 8;              // sequences per rank per micro-batch
  int grad_accum = 1;               // micro-batches per step
  std::optional<int> global_batch;  // train_batch_size, if the user gave it (checked against the world)
  int seq_len = 0;                  // 0: the model's n_positions
  int train_steps = 300;
  int steps_per_print = 10;
  std::uint64_t seed = 1234;
  double grad_clip = 1.0;  // 0: no clipping
  OptimizerConfig adamw;
  ScheduleConfig schedule;
  bool bf16 = true;  // weights travel in bf16; false = fp32 everywhere (exactness tests)

  // Plan: DeepSpeed's zero_optimization mapped to a preset, or tierzero.plan naming one.
  std::string plan = "zero3";
  std::string plan_name;         // tierzero.plan_name: the plan's name in logs; "" = derived
  int hpz_partition_size = 0;    // zero_hpz_partition_size (> 1: W_bwd on the domain of that size)
  int mics_shard_size = 0;       // mics_shard_size (> 0: all states on the domain of that size)
  std::optional<bool> qwz, qgz;  // unset: the preset's choice (zeropp turns both on)
  std::optional<bool> hpz;       // unset: the preset's choice; DeepSpeed configs: partition size > 1
  PlacementOverrides placement;
  std::string
      collectives;  // "hierarchical" | "flat" (one ring per group, as DeepSpeed runs); "" = the plan's
  int prefetch_depth = 1;
  // zero_optimization.stage3_prefetch_bucket_size (parameter elements fetched ahead of use): when set,
  // the prefetch depth is the number of the model's largest ranges that fit (train_run.cpp).
  std::optional<long long> prefetch_elements;
  int quant_block_size = 0;     // 0: the quantizer's default
  int max_nonfinite_steps = 3;  // skipped steps tolerated before all ranks stop together
  bool activation_recompute = false;
  std::string save_dir;  // checkpoints go here (empty: none are saved)
  int save_every = 0;    // steps between checkpoints; 0: only after the last step
  int keep = 0;          // complete checkpoints kept; 0: all
  // Faults (docs/faults.md): every collective first agrees on its signature; the seconds MPI start-up
  // may take before the rank gives up; where each rank's flight recorder is written ("off": never).
  bool check_collectives = false;
  double startup_timeout_s = 120;
  std::string flight_recorder = "tierzero-flight";

  // What reading the file found, for one log line each: DeepSpeed keys accepted that only tune
  // DeepSpeed's own machinery (full dotted names), and keys mapped onto a tierzero equivalent.
  std::vector<std::string> unused_keys;
  std::vector<std::string> mapped_keys;  // "zero_optimization.overlap_comm -> ...": what it became

  static TrainConfig from_json(const nlohmann::json& doc, const std::string& origin);
  static TrainConfig load(const std::string& path);
  nlohmann::json to_json() const;
};

}  // namespace tz
