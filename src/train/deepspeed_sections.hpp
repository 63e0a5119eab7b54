// The DeepSpeed sections of a training config, read honestly: every key is honoured, mapped to
// tierzero's equivalent, accepted as tuning only DeepSpeed's own machinery (recorded in
// TrainConfig::unused_keys, printed once), or an error that says why tierzero cannot do it.
// docs/deepspeed.md is the table of all of them. Internal to train_config.cpp.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "core/json_fields.hpp"
#include "train/train_config.hpp"

namespace tz::deepspeed {

// A key whose value is the string "auto" (Hugging Face's Trainer fills those in): tierzero's default.
bool is_auto(const JsonFields& f, std::string_view key);

// `where` names the section in messages ("config c.json: optimizer"); `path` is its dotted key prefix
// for unused_keys ("optimizer.params.").
void read_optimizer(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg);
void read_scheduler(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg);
void read_zero(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg);
// bf16 and fp16: fp16 enabled is an error; returns bf16's enabled.
bool read_bf16(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg);
void read_fp16(const nlohmann::json& doc, const std::string& where, TrainConfig& cfg);

// The top-level keys of DeepSpeed's config that are not sections tierzero reads: each is accepted
// (and recorded as unused) or refused with the reason. Returns false for a key that is not one of them.
bool read_machinery_key(const JsonFields& top, const std::string& key, TrainConfig& cfg);
// The names read_machinery_key knows (for allow_only).
const std::vector<std::string>& machinery_keys();

}  // namespace tz::deepspeed
