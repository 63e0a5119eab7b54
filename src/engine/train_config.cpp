#include "engine/train_config.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {
namespace {

int positive_int(const JsonFields& f, std::string_view key, int fallback, int min_value = 1) {
  long long v = f.integer_or(key, fallback);
  if (v < min_value || v > (1LL << 30))
    f.fail(key, fmt::format("must be an integer >= {}, got {}", min_value, v));
  return static_cast<int>(v);
}

void read_optimizer(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"type", "params"});
  std::string type = f.str_or("type", "AdamW");
  if (type != "AdamW" && type != "Adam" && type != "adamw" && type != "adam")
    f.fail("type", fmt::format("must be \"AdamW\" (decoupled weight decay), got \"{}\"", type));
  if (!f.has("params")) return;
  JsonFields p(f.raw("params"), where + ".params");
  p.allow_only({"lr", "betas", "eps", "weight_decay", "torch_adam", "adam_w_mode"});
  cfg.adamw.lr = p.number_or("lr", cfg.adamw.lr);
  cfg.adamw.eps = p.number_or("eps", cfg.adamw.eps);
  cfg.adamw.weight_decay = p.number_or("weight_decay", cfg.adamw.weight_decay);
  if (p.has("betas")) {
    const auto& b = p.raw("betas");
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number())
      p.fail("betas", fmt::format("must be [beta1, beta2], got {}", b.dump()));
    cfg.adamw.beta1 = b[0].get<double>();
    cfg.adamw.beta2 = b[1].get<double>();
  }
  if (p.has("adam_w_mode") && !p.boolean("adam_w_mode"))
    p.fail("adam_w_mode", "false is not supported: tierzero's optimizer is AdamW (decoupled weight decay)");
  if (!(cfg.adamw.lr > 0)) p.fail("lr", fmt::format("must be > 0, got {}", cfg.adamw.lr));
  for (auto [key, v] : {std::pair{"betas", cfg.adamw.beta1}, {"betas", cfg.adamw.beta2}})
    if (!(v >= 0 && v < 1)) p.fail(key, fmt::format("values must be in [0, 1), got {}", v));
  if (!(cfg.adamw.eps > 0)) p.fail("eps", fmt::format("must be > 0, got {}", cfg.adamw.eps));
  if (!(cfg.adamw.weight_decay >= 0))
    p.fail("weight_decay", fmt::format("must be >= 0, got {}", cfg.adamw.weight_decay));
}

void read_scheduler(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"type", "params"});
  std::string type = f.str_or("type", "WarmupCosineLR");
  if (type != "WarmupCosineLR" && type != "WarmupDecayLR" && type != "WarmupLR")
    f.fail("type", fmt::format("must be WarmupCosineLR, WarmupDecayLR or WarmupLR, got \"{}\"", type));
  if (!f.has("params")) return;
  JsonFields p(f.raw("params"), where + ".params");
  p.allow_only({"warmup_num_steps", "total_num_steps", "warmup_min_ratio", "cos_min_ratio", "warmup_max_lr",
                "warmup_min_lr", "warmup_type"});
  cfg.schedule.warmup_steps = positive_int(p, "warmup_num_steps", cfg.schedule.warmup_steps, 0);
  cfg.schedule.total_steps = positive_int(p, "total_num_steps", cfg.schedule.total_steps, 0);
  cfg.schedule.min_lr_ratio = p.number_or("cos_min_ratio", cfg.schedule.min_lr_ratio);
  if (type == "WarmupLR") cfg.schedule.min_lr_ratio = 1.0;  // constant after warmup
  if (p.has("warmup_max_lr")) cfg.adamw.lr = p.number("warmup_max_lr");
  if (!(cfg.schedule.min_lr_ratio >= 0 && cfg.schedule.min_lr_ratio <= 1))
    p.fail("cos_min_ratio", fmt::format("must be in [0, 1], got {}", cfg.schedule.min_lr_ratio));
}

void read_zero(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"stage", "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients",
                "mics_shard_size", "overlap_comm", "contiguous_gradients", "reduce_scatter"});
  long long stage = f.integer_or("stage", 3);
  static const char* kStagePlans[] = {"ddp", "zero1", "zero2", "zero3"};
  if (stage < 0 || stage > 3) f.fail("stage", fmt::format("must be 0, 1, 2 or 3, got {}", stage));
  cfg.plan = kStagePlans[stage];
  cfg.hpz_partition_size = positive_int(f, "zero_hpz_partition_size", 1);
  if (cfg.hpz_partition_size == 1) cfg.hpz_partition_size = 0;
  if (f.has("zero_quantized_weights")) cfg.qwz = f.boolean("zero_quantized_weights");
  if (f.has("zero_quantized_gradients")) cfg.qgz = f.boolean("zero_quantized_gradients");
  long long mics = f.integer_or("mics_shard_size", -1);
  if (mics == 0 || mics < -1)
    f.fail("mics_shard_size", fmt::format("must be a positive integer or -1, got {}", mics));
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
}

std::string placement(const JsonFields& f, std::string_view key) {
  std::string v = f.str_or(key, "");
  if (f.has(key) && v.empty()) f.fail(key, "must name a tier or \"replicated\"");
  return v;
}

void read_tierzero(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"plan", "W_fwd", "W_bwd", "G", "O", "prefetch_depth", "quant_block_size",
                "max_nonfinite_steps", "train_steps", "sequence_length", "activation_recompute", "qwz", "qgz",
                "hpz", "collectives"});
  cfg.plan = f.str_or("plan", cfg.plan);
  cfg.placement = {placement(f, "W_fwd"), placement(f, "W_bwd"), placement(f, "G"), placement(f, "O")};
  cfg.prefetch_depth = positive_int(f, "prefetch_depth", cfg.prefetch_depth, 0);
  cfg.quant_block_size = positive_int(f, "quant_block_size", cfg.quant_block_size, 0);
  cfg.max_nonfinite_steps = positive_int(f, "max_nonfinite_steps", cfg.max_nonfinite_steps, 0);
  cfg.train_steps = positive_int(f, "train_steps", cfg.train_steps);
  cfg.seq_len = positive_int(f, "sequence_length", cfg.seq_len, 0);
  cfg.activation_recompute = f.boolean_or("activation_recompute", cfg.activation_recompute);
  if (f.has("qwz")) cfg.qwz = f.boolean("qwz");
  if (f.has("qgz")) cfg.qgz = f.boolean("qgz");
  if (f.has("hpz")) cfg.hpz = f.boolean("hpz");
  cfg.collectives = f.str_or("collectives", cfg.collectives);
}

bool enabled(const nlohmann::json& doc, const std::string& where) {
  JsonFields f(doc, where);
  f.allow_only({"enabled", "loss_scale", "initial_scale_power", "auto_cast"});
  return f.boolean_or("enabled", false);
}

}  // namespace

TrainConfig TrainConfig::from_json(const nlohmann::json& doc, const std::string& origin) {
  const std::string where = "config " + origin;
  JsonFields f(doc, where);
  f.allow_only({"train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
                "gradient_clipping", "steps_per_print", "seed", "optimizer", "scheduler", "bf16", "fp16",
                "zero_optimization", "tierzero", "wall_clock_breakdown", "comment"});
  TrainConfig cfg;
  cfg.micro_batch = positive_int(f, "train_micro_batch_size_per_gpu", cfg.micro_batch);
  cfg.grad_accum = positive_int(f, "gradient_accumulation_steps", cfg.grad_accum);
  if (f.has("train_batch_size")) cfg.global_batch = positive_int(f, "train_batch_size", 1);
  cfg.grad_clip = f.number_or("gradient_clipping", cfg.grad_clip);
  if (!(cfg.grad_clip >= 0)) f.fail("gradient_clipping", fmt::format("must be >= 0, got {}", cfg.grad_clip));
  cfg.steps_per_print = positive_int(f, "steps_per_print", cfg.steps_per_print);
  cfg.seed = static_cast<std::uint64_t>(positive_int(f, "seed", static_cast<int>(cfg.seed), 0));
  if (f.has("optimizer")) read_optimizer(f.raw("optimizer"), where + ": optimizer", cfg);
  if (f.has("scheduler")) read_scheduler(f.raw("scheduler"), where + ": scheduler", cfg);
  if (f.has("fp16") && enabled(f.raw("fp16"), where + ": fp16"))
    f.fail("fp16", "enabled is not supported: use bf16 (no loss scaling needed) or fp32");
  cfg.bf16 = f.has("bf16") ? enabled(f.raw("bf16"), where + ": bf16") : cfg.bf16;
  if (f.has("zero_optimization")) read_zero(f.raw("zero_optimization"), where + ": zero_optimization", cfg);
  if (f.has("tierzero")) read_tierzero(f.raw("tierzero"), where + ": tierzero", cfg);
  return cfg;
}

TrainConfig TrainConfig::load(const std::string& path) {
  return from_json(read_json_file(path), path);
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", micro_batch},
      {"gradient_accumulation_steps", grad_accum},
      {"gradient_clipping", grad_clip},
      {"steps_per_print", steps_per_print},
      {"seed", seed},
      {"optimizer",
       {{"type", "AdamW"},
        {"params",
         {{"lr", adamw.lr},
          {"betas", {adamw.beta1, adamw.beta2}},
          {"eps", adamw.eps},
          {"weight_decay", adamw.weight_decay}}}}},
      {"scheduler",
       {{"type", "WarmupCosineLR"},
        {"params",
         {{"warmup_num_steps", schedule.warmup_steps},
          {"total_num_steps", schedule.total_steps},
          {"cos_min_ratio", schedule.min_lr_ratio}}}}},
      {"bf16", {{"enabled", bf16}}},
  };
  if (global_batch) j["train_batch_size"] = *global_batch;
  nlohmann::json t = {{"plan", plan},
                      {"prefetch_depth", prefetch_depth},
                      {"quant_block_size", quant_block_size},
                      {"max_nonfinite_steps", max_nonfinite_steps},
                      {"train_steps", train_steps},
                      {"sequence_length", seq_len},
                      {"activation_recompute", activation_recompute}};
  if (qwz) t["qwz"] = *qwz;
  if (qgz) t["qgz"] = *qgz;
  if (hpz) t["hpz"] = *hpz;
  if (!collectives.empty()) t["collectives"] = collectives;
  for (auto [key, v] : {std::pair{"W_fwd", &placement.w_fwd},
                        {"W_bwd", &placement.w_bwd},
                        {"G", &placement.g},
                        {"O", &placement.o}})
    if (!v->empty()) t[key] = *v;
  j["tierzero"] = t;
  if (hpz_partition_size || mics_shard_size)
    j["zero_optimization"] = {{"stage", 3},
                              {"zero_hpz_partition_size", std::max(1, hpz_partition_size)},
                              {"mics_shard_size", mics_shard_size > 0 ? mics_shard_size : -1}};
  return j;
}

}  // namespace tz
