#include "train/deepspeed_sections.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/known_keys.hpp"

namespace tz::deepspeed {
namespace {

constexpr long long kMaxCount = 1LL << 30;

void unknown_key(const JsonFields& f, const std::string& key, const std::vector<std::string>& known) {
  fail_input("{}: unknown key '{}' ({})", f.where(), text_excerpt(key),
             known_keys_text(key, std::vector<std::string_view>(known.begin(), known.end())));
}

// Every key of f must be in one of the lists.
void allow(const JsonFields& f, const nlohmann::json& doc, const std::vector<std::string>& known) {
  for (const auto& [key, value] : doc.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) unknown_key(f, key, known);
}

void note_unused(TrainConfig& cfg, const std::string& path) {
  if (std::find(cfg.unused_keys.begin(), cfg.unused_keys.end(), path) == cfg.unused_keys.end())
    cfg.unused_keys.push_back(path);
}

// A count that DeepSpeed configs often write as a float (5e8): any integral value in [min, max].
long long count(const JsonFields& f, std::string_view key, long long min, long long max) {
  const auto& v = f.raw(key);
  if (v.is_number_integer()) return f.integer(key, min, max);
  const double d = v.is_number() ? v.get<double>() : NAN;
  if (!std::isfinite(d) || d != std::floor(d) || d < double(min) || d > double(max))
    f.fail(key, fmt::format("must be an integer in [{}, {}], got {}", min, max, json_excerpt(v)));
  return static_cast<long long>(d);
}

double number_in(const JsonFields& f, std::string_view key, double min, double max, double fallback) {
  if (!f.has(key) || is_auto(f, key)) return fallback;
  const double v = f.number(key);
  if (!(v >= min && v <= max)) f.fail(key, fmt::format("must be in [{}, {}], got {}", min, max, v));
  return v;
}

// A key that must have one value (DeepSpeed's default or an equivalent one) because tierzero
// computes only that; anything else is an error that says why.
void require_bool(const JsonFields& f, std::string_view key, bool required, std::string_view why) {
  if (f.has(key) && !is_auto(f, key) && f.boolean(key) != required)
    f.fail(key, fmt::format("{} is not supported: {}", required ? "false" : "true", why));
}

// A section {"enabled": false, ...} of a DeepSpeed feature tierzero does not have.
void feature_off(const nlohmann::json& doc, const std::string& where, const std::string& key,
                 std::string_view why, TrainConfig& cfg) {
  JsonFields f(doc, where + ": " + key);
  if (f.has("enabled") && !is_auto(f, "enabled") && f.boolean("enabled"))
    f.fail("enabled", fmt::format("true is not supported: {}", why));
  if (!f.has("enabled") || is_auto(f, "enabled"))
    fail_input("{}: key '{}' is not supported ({}); set \"enabled\": false or remove it", where, key, why);
  note_unused(cfg, key);
}

}  // namespace

bool is_auto(const JsonFields& f, std::string_view key) {
  return f.has(key) && f.raw(key).is_string() && f.raw(key).get<std::string>() == "auto";
}

void read_optimizer(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"type", "params"});
  const std::string type = f.str_or("type", "AdamW");
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower != "adamw" && lower != "adam")
    f.fail("type", fmt::format("\"{}\" is not supported: tierzero implements Adam and AdamW (DeepSpeed's "
                               "other optimizers, 1-bit Adam, LAMB, ..., are not)",
                               text_excerpt(type)));
  const bool adamw_type = lower == "adamw";
  if (!f.has("params")) return;
  JsonFields p(f.raw("params"), where + ".params");
  p.allow_only({"lr", "betas", "eps", "weight_decay", "adam_w_mode", "torch_adam", "bias_correction",
                "amsgrad", "max_grad_norm", "set_grad_none", "fused", "foreach", "capturable"});
  cfg.adamw.lr = number_in(p, "lr", 0, 1e3, cfg.adamw.lr);
  if (!(cfg.adamw.lr > 0)) p.fail("lr", fmt::format("must be > 0, got {}", cfg.adamw.lr));
  cfg.adamw.eps = number_in(p, "eps", 0, 1, cfg.adamw.eps);
  if (!(cfg.adamw.eps > 0)) p.fail("eps", fmt::format("must be > 0, got {}", cfg.adamw.eps));
  cfg.adamw.weight_decay = number_in(p, "weight_decay", 0, 1e3, cfg.adamw.weight_decay);
  if (p.has("betas") && !is_auto(p, "betas")) {
    const auto& b = p.raw("betas");
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number())
      p.fail("betas", fmt::format("must be [beta1, beta2], got {}", json_excerpt(b)));
    cfg.adamw.beta1 = b[0].get<double>();
    cfg.adamw.beta2 = b[1].get<double>();
    for (double v : {cfg.adamw.beta1, cfg.adamw.beta2})
      if (!(v >= 0 && v < 1)) p.fail("betas", fmt::format("values must be in [0, 1), got {}", v));
  }
  // DeepSpeed: "AdamW" always decouples the weight decay; "Adam" does too unless adam_w_mode is false,
  // in which case the decay is an L2 term added to the gradient (torch.optim.Adam).
  if (p.has("adam_w_mode")) {
    const bool w_mode = p.boolean("adam_w_mode");
    if (adamw_type && !w_mode)
      p.fail("adam_w_mode",
             "false with type AdamW: DeepSpeed runs AdamW regardless; use type \"Adam\" for L2 weight decay");
    cfg.adamw.decoupled_weight_decay = w_mode;
  } else {
    cfg.adamw.decoupled_weight_decay = true;
  }
  if (p.has("max_grad_norm"))
    p.fail("max_grad_norm",
           "is not an optimizer parameter (DeepSpeed refuses it too): use gradient_clipping");
  require_bool(p, "bias_correction", true, "tierzero's Adam always corrects the moments' bias");
  require_bool(p, "amsgrad", false, "AMSGrad is not implemented");
  for (const char* k : {"torch_adam", "set_grad_none", "fused", "foreach", "capturable"})
    if (p.has(k)) note_unused(cfg, "optimizer.params." + std::string(k));
}

void read_scheduler(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"type", "params"});
  const std::string type = f.str("type");
  // DeepSpeed's signatures, with its defaults (deepspeed/runtime/lr_schedules.py).
  std::vector<std::string> params;
  ScheduleConfig& s = cfg.schedule;
  s = ScheduleConfig{};
  s.type = type;
  s.warmup_steps = 1000;
  s.warmup_type = "log";
  s.total_steps = 0;
  if (type == "WarmupLR") {
    params = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"};
  } else if (type == "WarmupDecayLR") {
    params = {"total_num_steps",  "warmup_min_lr", "warmup_max_lr",
              "warmup_num_steps", "warmup_type",   "last_batch_iteration"};
  } else if (type == "WarmupCosineLR") {
    params = {"total_num_steps", "warmup_min_ratio", "warmup_num_steps",
              "cos_min_ratio",   "warmup_type",      "last_batch_iteration"};
  } else {
    f.fail("type", fmt::format("\"{}\" is not supported: tierzero implements WarmupLR, WarmupDecayLR and "
                               "WarmupCosineLR (OneCycle and LRRangeTest are not)",
                               text_excerpt(type)));
  }
  if (!f.has("params")) return;
  JsonFields p(f.raw("params"), fmt::format("{}.params ({})", where, type));
  allow(p, f.raw("params"), params);
  if (p.has("warmup_num_steps") && !is_auto(p, "warmup_num_steps"))
    s.warmup_steps = static_cast<int>(count(p, "warmup_num_steps", 0, kMaxCount));
  else if (is_auto(p, "warmup_num_steps"))
    s.warmup_steps = ScheduleConfig{}.warmup_steps;
  if (p.has("total_num_steps") && !is_auto(p, "total_num_steps"))
    s.total_steps = static_cast<int>(count(p, "total_num_steps", 1, kMaxCount));
  if (p.has("warmup_type") && !is_auto(p, "warmup_type")) {
    s.warmup_type = p.str("warmup_type");
    if (s.warmup_type != "log" && s.warmup_type != "linear")
      p.fail("warmup_type", fmt::format("must be \"log\" or \"linear\", got \"{}\" (DeepSpeed would silently "
                                        "fall back to log)",
                                        text_excerpt(s.warmup_type)));
  }
  s.warmup_min_lr = number_in(p, "warmup_min_lr", 0, 1e3, 0.0);
  if (p.has("warmup_max_lr") && !is_auto(p, "warmup_max_lr")) {
    s.warmup_max_lr = number_in(p, "warmup_max_lr", 0, 1e3, 0.0);
    if (!(*s.warmup_max_lr > 0))
      p.fail("warmup_max_lr", fmt::format("must be > 0, got {}", *s.warmup_max_lr));
  } else if (is_auto(p, "warmup_max_lr")) {
    s.warmup_max_lr = cfg.adamw.lr;
  }
  s.warmup_min_ratio = number_in(p, "warmup_min_ratio", 0, 1, 0.0);
  s.cos_min_ratio = number_in(p, "cos_min_ratio", 0, 1, 1e-4);
  if (p.has("last_batch_iteration") && p.integer("last_batch_iteration") != -1)
    p.fail("last_batch_iteration",
           fmt::format(
               "must be -1 (start from the beginning), got {}: a resumed run continues its schedule from "
               "its checkpoint",
               p.integer("last_batch_iteration")));
}

void read_zero(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  static const std::vector<std::string> unused = {"overlap_comm",
                                                  "contiguous_gradients",
                                                  "reduce_scatter",
                                                  "reduce_bucket_size",
                                                  "allgather_partitions",
                                                  "allgather_bucket_size",
                                                  "stage3_param_persistence_threshold",
                                                  "stage3_max_live_parameters",
                                                  "stage3_max_reuse_distance",
                                                  "stage3_gather_16bit_weights_on_model_save",
                                                  "gather_16bit_weights_on_model_save",
                                                  "stage3_gather_fp16_weights_on_model_save",
                                                  "sub_group_size",
                                                  "round_robin_gradients",
                                                  "elastic_checkpoint",
                                                  "load_from_fp32_weights",
                                                  "ignore_unused_parameters",
                                                  "memory_efficient_linear",
                                                  "use_multi_rank_bucket_allreduce",
                                                  "zero_quantized_nontrainable_weights",
                                                  "pipeline_loading_checkpoint",
                                                  "override_module_apply",
                                                  "log_trace_cache_warnings",
                                                  "legacy_stage1",
                                                  "module_granularity_threshold",
                                                  "use_all_reduce_for_fetch_params"};
  std::vector<std::string> known = {"stage",
                                    "zero_hpz_partition_size",
                                    "zero_quantized_weights",
                                    "zero_quantized_gradients",
                                    "mics_shard_size",
                                    "mics_hierarchical_params_gather",
                                    "stage3_prefetch_bucket_size",
                                    "offload_param",
                                    "offload_optimizer",
                                    "cpu_offload",
                                    "cpu_offload_params",
                                    "cpu_offload_use_pin_memory",
                                    "zeropp_loco_param"};
  known.insert(known.end(), unused.begin(), unused.end());
  allow(f, doc, known);
  const long long stage = f.integer_or("stage", 3, 0, 3);
  static const char* kStagePlans[] = {"ddp", "zero1", "zero2", "zero3"};
  cfg.plan = kStagePlans[stage];
  cfg.hpz_partition_size = f.has("zero_hpz_partition_size") && !is_auto(f, "zero_hpz_partition_size")
                               ? static_cast<int>(count(f, "zero_hpz_partition_size", 1, kMaxCount))
                               : 1;
  if (cfg.hpz_partition_size == 1) cfg.hpz_partition_size = 0;
  if (f.has("zero_quantized_weights")) cfg.qwz = f.boolean("zero_quantized_weights");
  if (f.has("zero_quantized_gradients")) cfg.qgz = f.boolean("zero_quantized_gradients");
  const long long mics = f.has("mics_shard_size") ? count(f, "mics_shard_size", -1, kMaxCount) : -1;
  if (mics == 0) f.fail("mics_shard_size", fmt::format("must be a positive integer or -1, got {}", mics));
  cfg.mics_shard_size = mics > 0 ? static_cast<int>(mics) : 0;
  const bool zeropp = cfg.hpz_partition_size || cfg.qwz.value_or(false) || cfg.qgz.value_or(false);
  if (zeropp && stage != 3)
    f.fail("stage", fmt::format("must be 3 for ZeRO++ options (hpZ, qwZ, qgZ), got {}", stage));
  if (zeropp) {
    // As in DeepSpeed, each ZeRO++ technique is on only when its key turns it on.
    cfg.plan = "zeropp";
    cfg.hpz = cfg.hpz_partition_size > 1;
    cfg.qwz = cfg.qwz.value_or(false);
    cfg.qgz = cfg.qgz.value_or(false);
  }
  if (cfg.mics_shard_size) cfg.plan = "mics";
  if (f.has("mics_hierarchical_params_gather")) {
    // DeepSpeed's MiCS gathers parameters either in one flat all-gather over the shard group or
    // tier by tier: tierzero's two collective algorithms.
    cfg.collectives = f.boolean("mics_hierarchical_params_gather") ? "hierarchical" : "flat";
    cfg.mapped_keys.push_back("zero_optimization.mics_hierarchical_params_gather -> tierzero.collectives " +
                              cfg.collectives);
  }
  if (f.has("stage3_prefetch_bucket_size") && !is_auto(f, "stage3_prefetch_bucket_size")) {
    cfg.prefetch_elements = count(f, "stage3_prefetch_bucket_size", 0, 1LL << 50);
    cfg.mapped_keys.push_back(fmt::format(
        "zero_optimization.stage3_prefetch_bucket_size {} -> tierzero.prefetch_depth (ranges that fit)",
        *cfg.prefetch_elements));
  }
  for (const char* k : {"offload_param", "offload_optimizer"}) {
    if (!f.has(k)) continue;
    JsonFields o(f.raw(k), f.where() + "." + k);
    const std::string device = o.str_or("device", "none");
    if (device != "none")
      o.fail("device", fmt::format("\"{}\" is not supported: tierzero keeps every model state in the ranks' "
                                   "memory (no CPU or NVMe offload)",
                                   text_excerpt(device)));
    note_unused(cfg, std::string("zero_optimization.") + k);
  }
  for (const char* k : {"cpu_offload", "cpu_offload_params"})
    require_bool(f, k, false, "tierzero keeps every model state in the ranks' memory (no CPU offload)");
  for (const char* k : {"cpu_offload", "cpu_offload_params", "cpu_offload_use_pin_memory"})
    if (f.has(k)) note_unused(cfg, std::string("zero_optimization.") + k);
  if (f.has("zeropp_loco_param"))
    f.fail("zeropp_loco_param", "is not supported: ZeRO++'s LoCo error feedback is not implemented");
  for (const auto& k : unused)
    if (f.has(k)) note_unused(cfg, "zero_optimization." + k);
}

bool read_bf16(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"enabled", "immediate_grad_update", "check_grad_overflow", "auto_cast"});
  for (const char* k : {"immediate_grad_update", "check_grad_overflow"})
    if (f.has(k)) note_unused(cfg, std::string("bf16.") + k);
  if (f.has("auto_cast")) note_unused(cfg, "bf16.auto_cast");
  return is_auto(f, "enabled") ? true : f.boolean_or("enabled", false);
}

void read_fp16(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                "consecutive_hysteresis", "min_loss_scale", "auto_cast", "fp16_master_weights_and_grads"});
  if (!is_auto(f, "enabled") && f.boolean_or("enabled", false))
    fail_input(
        "{}: key 'enabled' true is not supported: tierzero trains in bf16 (no loss scaling needed) or "
        "fp32 (--fp32)",
        where);
  note_unused(cfg, "fp16");
}

const std::vector<std::string>& machinery_keys() {
  static const std::vector<std::string> keys = {"wall_clock_breakdown",
                                                "dump_state",
                                                "memory_breakdown",
                                                "flops_profiler",
                                                "tensorboard",
                                                "wandb",
                                                "csv_monitor",
                                                "comet",
                                                "comms_logger",
                                                "monitor_config",
                                                "zero_allow_untested_optimizer",
                                                "zero_force_ds_cpu_optimizer",
                                                "prescale_gradients",
                                                "gradient_predivide_factor",
                                                "communication_data_type",
                                                "sparse_gradients",
                                                "amp",
                                                "data_types",
                                                "activation_checkpointing",
                                                "aio",
                                                "elasticity",
                                                "autotuning",
                                                "compression_training",
                                                "data_efficiency",
                                                "curriculum_learning",
                                                "hybrid_engine",
                                                "checkpoint",
                                                "timers",
                                                "disable_allgather"};
  return keys;
}

bool read_machinery_key(const JsonFields& top, const std::string& key, TrainConfig& cfg) {
  const auto& keys = machinery_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) return false;
  const nlohmann::json& v = top.raw(key);
  const std::string& where = top.where();
  if (key == "sparse_gradients") {
    require_bool(top, key, false,
                 "tierzero's gradients are dense (sparse embedding updates are not implemented)");
  } else if (key == "amp") {
    feature_off(v, where, key, "NVIDIA Apex AMP; tierzero trains in bf16 or fp32", cfg);
    return true;
  } else if (key == "elasticity") {
    feature_off(v, where, key, "elastic training is not implemented", cfg);
    return true;
  } else if (key == "autotuning") {
    feature_off(v, where, key, "DeepSpeed's autotuner; `tierzero plan` searches plans with the cost model",
                cfg);
    return true;
  } else if (key == "hybrid_engine") {
    feature_off(v, where, key, "the RLHF hybrid engine is not implemented", cfg);
    return true;
  } else if (key == "data_efficiency" || key == "curriculum_learning") {
    feature_off(v, where, key, "data sampling and curriculum schedules change the data; not implemented",
                cfg);
    return true;
  } else if (key == "compression_training") {
    fail_input(
        "{}: key 'compression_training' is not supported: quantization-aware training and pruning "
        "change the model; not implemented",
        where);
  } else if (key == "data_types") {
    JsonFields d(v, where + ": data_types");
    d.allow_only({"grad_accum_dtype"});
    if (d.has("grad_accum_dtype")) {
      const std::string t = d.str("grad_accum_dtype");
      if (t != "fp32" && t != "float32" && t != "float")
        d.fail(
            "grad_accum_dtype",
            fmt::format("\"{}\" is not supported: tierzero accumulates gradients in fp32", text_excerpt(t)));
    }
  } else if (key == "communication_data_type") {
    // Checked against bf16 once the whole file is read (TrainConfig::from_json).
    top.str(key);
  } else if (key == "gradient_predivide_factor") {
    const double g = top.number(key);
    if (!(g > 0)) top.fail(key, fmt::format("must be > 0, got {}", g));
  }
  note_unused(cfg, key);
  return true;
}

}  // namespace tz::deepspeed
