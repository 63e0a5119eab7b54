#include "train/train_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/known_keys.hpp"
#include "train/deepspeed_sections.hpp"

namespace tz {
namespace {

constexpr long long kMaxCount = 1LL << 30;  // any count in a config (steps, batch, sizes) is below this

int positive_int(const JsonFields& f, std::string_view key, int fallback, int min_value = 1) {
  if (deepspeed::is_auto(f, key)) return fallback;
  return static_cast<int>(f.integer_or(key, fallback, min_value, kMaxCount));
}

std::string placement(const JsonFields& f, std::string_view key) {
  std::string v = f.str_or(key, "");
  if (f.has(key) && v.empty()) f.fail(key, "must name a tier or \"replicated\"");
  return v;
}

// tierzero's own learning-rate schedule (ScheduleConfig "cosine"): an alternative to "scheduler".
void read_lr_schedule(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"warmup_steps", "decay_steps", "min_lr_ratio"});
  ScheduleConfig& s = cfg.schedule;
  s = ScheduleConfig{};
  s.warmup_steps = positive_int(f, "warmup_steps", s.warmup_steps, 0);
  s.total_steps = positive_int(f, "decay_steps", s.total_steps, 0);
  s.min_lr_ratio = f.number_or("min_lr_ratio", s.min_lr_ratio);
  if (!(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1))
    f.fail("min_lr_ratio", fmt::format("must be in [0, 1], got {}", s.min_lr_ratio));
}

void read_tierzero(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg) {
  JsonFields f(doc, where);
  f.allow_only({"plan",
                "plan_name",
                "W_fwd",
                "W_bwd",
                "G",
                "O",
                "prefetch_depth",
                "quant_block_size",
                "max_nonfinite_steps",
                "train_steps",
                "sequence_length",
                "activation_recompute",
                "qwz",
                "qgz",
                "hpz",
                "collectives",
                "lr_schedule",
                "save_dir",
                "save_every",
                "keep",
                "check_collectives",
                "startup_timeout_s",
                "flight_recorder"});
  cfg.plan = f.str_or("plan", cfg.plan);
  if (cfg.plan.empty()) f.fail("plan", "must name a preset, \"custom\" or \"auto\"");
  cfg.plan_name = f.str_or("plan_name", cfg.plan_name);
  if (cfg.plan_name.size() > 200 ||
      std::any_of(cfg.plan_name.begin(), cfg.plan_name.end(), [](char ch) { return ch >= 0 && ch < ' '; }))
    f.fail("plan_name",
           fmt::format("must be at most 200 printable characters, got \"{}\"", text_excerpt(cfg.plan_name)));
  cfg.placement = {placement(f, "W_fwd"), placement(f, "W_bwd"), placement(f, "G"), placement(f, "O")};
  if (f.has("prefetch_depth")) {
    if (cfg.prefetch_elements)
      f.fail("prefetch_depth",
             "and zero_optimization.stage3_prefetch_bucket_size both set the prefetch: give one");
    cfg.prefetch_depth = positive_int(f, "prefetch_depth", cfg.prefetch_depth, 0);
  }
  cfg.quant_block_size = positive_int(f, "quant_block_size", cfg.quant_block_size, 0);
  cfg.max_nonfinite_steps = positive_int(f, "max_nonfinite_steps", cfg.max_nonfinite_steps, 0);
  cfg.train_steps = positive_int(f, "train_steps", cfg.train_steps);
  cfg.seq_len = positive_int(f, "sequence_length", cfg.seq_len, 0);
  cfg.activation_recompute = f.boolean_or("activation_recompute", cfg.activation_recompute);
  if (f.has("qwz")) cfg.qwz = f.boolean("qwz");
  if (f.has("qgz")) cfg.qgz = f.boolean("qgz");
  if (f.has("hpz")) cfg.hpz = f.boolean("hpz");
  if (f.has("collectives")) {
    cfg.collectives = f.str("collectives");
    if (cfg.collectives != "hierarchical" && cfg.collectives != "flat")
      f.fail("collectives",
             fmt::format("must be \"hierarchical\" or \"flat\", got \"{}\"", text_excerpt(cfg.collectives)));
  }
  if (f.has("lr_schedule")) read_lr_schedule(f.raw("lr_schedule"), where + ".lr_schedule", cfg);
  cfg.save_dir = f.str_or("save_dir", cfg.save_dir);
  if (f.has("save_dir") && cfg.save_dir.empty()) f.fail("save_dir", "must name a directory");
  cfg.save_every = positive_int(f, "save_every", cfg.save_every, 0);
  cfg.keep = positive_int(f, "keep", cfg.keep, 0);
  cfg.check_collectives = f.boolean_or("check_collectives", cfg.check_collectives);
  if (f.has("startup_timeout_s")) {
    cfg.startup_timeout_s = f.number("startup_timeout_s");
    if (!(cfg.startup_timeout_s > 0 && cfg.startup_timeout_s <= kMaxStartupTimeoutS))
      f.fail("startup_timeout_s",
             fmt::format("must be in (0, {}] seconds, got {}", kMaxStartupTimeoutS, cfg.startup_timeout_s));
  }
  if (f.has("flight_recorder")) {
    cfg.flight_recorder = f.str("flight_recorder");
    if (cfg.flight_recorder.empty()) f.fail("flight_recorder", "must name a directory, or \"off\"");
  }
}

}  // namespace

TrainConfig TrainConfig::from_json(const nlohmann::json& doc, const std::string& origin) {
  const std::string where = "config " + origin;
  JsonFields f(doc, where);
  static const std::vector<std::string> own = {"train_micro_batch_size_per_gpu",
                                               "gradient_accumulation_steps",
                                               "train_batch_size",
                                               "gradient_clipping",
                                               "steps_per_print",
                                               "seed",
                                               "optimizer",
                                               "scheduler",
                                               "bf16",
                                               "fp16",
                                               "zero_optimization",
                                               "tierzero",
                                               "comment"};
  TrainConfig cfg;
  for (const auto& [key, value] : doc.items()) {
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    if (!deepspeed::read_machinery_key(f, key, cfg)) {
      fail_input("{}: unknown key '{}' ({}, and DeepSpeed's keys listed in docs/deepspeed.md)", where,
                 text_excerpt(key),
                 known_keys_text(key, std::vector<std::string_view>(own.begin(), own.end())));
    }
  }
  if (f.has("comment")) f.str("comment");
  cfg.micro_batch = positive_int(f, "train_micro_batch_size_per_gpu", cfg.micro_batch);
  cfg.grad_accum = positive_int(f, "gradient_accumulation_steps", cfg.grad_accum);
  if (f.has("train_batch_size") && !deepspeed::is_auto(f, "train_batch_size"))
    cfg.global_batch = positive_int(f, "train_batch_size", 1);
  if (!deepspeed::is_auto(f, "gradient_clipping"))
    cfg.grad_clip = f.number_or("gradient_clipping", cfg.grad_clip);
  if (!(cfg.grad_clip >= 0 && cfg.grad_clip <= 1e6))
    f.fail("gradient_clipping", fmt::format("must be in [0, 1e6] (0: no clipping), got {}", cfg.grad_clip));
  cfg.steps_per_print = positive_int(f, "steps_per_print", cfg.steps_per_print);
  if (f.has("seed")) cfg.seed = static_cast<std::uint64_t>(f.integer("seed", 0, LLONG_MAX));
  if (f.has("optimizer")) deepspeed::read_optimizer(f.raw("optimizer"), where + ": optimizer", cfg);
  if (f.has("scheduler")) {
    deepspeed::read_scheduler(f.raw("scheduler"), where + ": scheduler", cfg);
    // WarmupLR and WarmupDecayLR set the learning rate from warmup_max_lr, as in DeepSpeed.
    const bool own_peak = cfg.schedule.type == "WarmupLR" || cfg.schedule.type == "WarmupDecayLR";
    const nlohmann::json none = nlohmann::json::object();
    const nlohmann::json& opt = f.has("optimizer") ? f.raw("optimizer") : none;
    if (own_peak && opt.contains("params") && opt.at("params").is_object() && opt.at("params").contains("lr"))
      cfg.unused_keys.push_back("optimizer.params.lr (" + cfg.schedule.type + " takes warmup_max_lr)");
  }
  if (f.has("fp16")) deepspeed::read_fp16(f.raw("fp16"), where + ": fp16", cfg);
  if (f.has("bf16")) cfg.bf16 = deepspeed::read_bf16(f.raw("bf16"), where + ": bf16", cfg);
  if (f.has("communication_data_type")) {
    const std::string t = f.str("communication_data_type");
    const bool fp32 = t == "fp32" || t == "float32" || t == "float";
    const bool bf16 = t == "bf16" || t == "bfloat16";
    if (!(fp32 && !cfg.bf16) && !(bf16 && cfg.bf16))
      f.fail(
          "communication_data_type",
          fmt::format("\"{}\" is not supported with bf16 {}: tierzero's weights and gradients travel in the "
                      "compute dtype ({})",
                      text_excerpt(t), cfg.bf16 ? "enabled" : "disabled", cfg.bf16 ? "bf16" : "fp32"));
  }
  if (f.has("zero_optimization"))
    deepspeed::read_zero(f.raw("zero_optimization"), where + ": zero_optimization", cfg);
  if (f.has("tierzero")) read_tierzero(f.raw("tierzero"), where + ": tierzero", cfg);
  if (f.has("scheduler") && f.has("tierzero") && f.raw("tierzero").contains("lr_schedule"))
    f.fail("scheduler", "and tierzero.lr_schedule both set the learning-rate schedule: give one");
  return cfg;
}

TrainConfig TrainConfig::load(const std::string& path) {
  return from_json(read_json_file(path, "config"), path);
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json params = {{"lr", adamw.lr},
                           {"betas", {adamw.beta1, adamw.beta2}},
                           {"eps", adamw.eps},
                           {"weight_decay", adamw.weight_decay}};
  if (!adamw.decoupled_weight_decay) params["adam_w_mode"] = false;
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", micro_batch},
      {"gradient_accumulation_steps", grad_accum},
      {"gradient_clipping", grad_clip},
      {"steps_per_print", steps_per_print},
      {"seed", seed},
      {"optimizer", {{"type", adamw.decoupled_weight_decay ? "AdamW" : "Adam"}, {"params", params}}},
      {"bf16", {{"enabled", bf16}}},
  };
  const ScheduleConfig& s = schedule;
  nlohmann::json sp;
  if (s.type == "WarmupLR" || s.type == "WarmupDecayLR") {
    sp = {{"warmup_min_lr", s.warmup_min_lr},
          {"warmup_num_steps", s.warmup_steps},
          {"warmup_type", s.warmup_type}};
    if (s.warmup_max_lr) sp["warmup_max_lr"] = *s.warmup_max_lr;
  } else if (s.type == "WarmupCosineLR") {
    sp = {{"warmup_min_ratio", s.warmup_min_ratio},
          {"warmup_num_steps", s.warmup_steps},
          {"cos_min_ratio", s.cos_min_ratio},
          {"warmup_type", s.warmup_type}};
  }
  if (s.deepspeed()) {
    if (s.type != "WarmupLR" && s.total_steps > 0) sp["total_num_steps"] = s.total_steps;
    j["scheduler"] = {{"type", s.type}, {"params", sp}};
  }
  if (global_batch) j["train_batch_size"] = *global_batch;
  nlohmann::json t = {{"plan", plan},
                      {"plan_name", plan_name},
                      {"quant_block_size", quant_block_size},
                      {"max_nonfinite_steps", max_nonfinite_steps},
                      {"train_steps", train_steps},
                      {"sequence_length", seq_len},
                      {"activation_recompute", activation_recompute},
                      {"check_collectives", check_collectives}};
  if (!prefetch_elements) t["prefetch_depth"] = prefetch_depth;
  if (!s.deepspeed())
    t["lr_schedule"] = {
        {"warmup_steps", s.warmup_steps}, {"decay_steps", s.total_steps}, {"min_lr_ratio", s.min_lr_ratio}};
  if (qwz) t["qwz"] = *qwz;
  if (qgz) t["qgz"] = *qgz;
  if (hpz) t["hpz"] = *hpz;
  if (!collectives.empty()) t["collectives"] = collectives;
  if (!save_dir.empty()) t["save_dir"] = save_dir;
  if (save_every) t["save_every"] = save_every;
  if (keep) t["keep"] = keep;
  for (auto [key, v] : {std::pair{"W_fwd", &placement.w_fwd},
                        {"W_bwd", &placement.w_bwd},
                        {"G", &placement.g},
                        {"O", &placement.o}})
    if (!v->empty()) t[key] = *v;
  j["tierzero"] = t;
  nlohmann::json zero;
  if (hpz_partition_size || mics_shard_size)
    zero = {{"stage", 3},
            {"zero_hpz_partition_size", std::max(1, hpz_partition_size)},
            {"mics_shard_size", mics_shard_size > 0 ? mics_shard_size : -1}};
  if (prefetch_elements) {
    if (zero.is_null()) zero = {{"stage", 3}};
    zero["stage3_prefetch_bucket_size"] = *prefetch_elements;
  }
  if (!zero.is_null()) j["zero_optimization"] = zero;
  return j;
}

}  // namespace tz
