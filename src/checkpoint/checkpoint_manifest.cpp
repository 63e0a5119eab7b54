#include "checkpoint/checkpoint_manifest.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>

#include "checkpoint/crc32c.hpp"
#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"

namespace tz {
namespace {

std::uint64_t u64(const JsonFields& f, std::string_view key) {
  return static_cast<std::uint64_t>(f.integer(key, 0, LLONG_MAX));
}

int count(const JsonFields& f, std::string_view key) {
  return static_cast<int>(f.integer(key, 0, INT_MAX));
}

std::uint32_t parse_crc(const nlohmann::json& v, const std::string& where) {
  if (!v.is_string() || v.get<std::string>().size() != 8)
    fail_input("{}: a checksum must be 8 hex digits, got {}", where, json_excerpt(v));
  const std::string s = v.get<std::string>();
  std::uint32_t c = 0;
  for (char ch : s) {
    int d = (ch >= '0' && ch <= '9') ? ch - '0' : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10 : -1;
    if (d < 0) fail_input("{}: a checksum must be 8 hex digits, got {}", where, json_excerpt(v));
    c = (c << 4) | static_cast<std::uint32_t>(d);
  }
  return c;
}

std::uint64_t blocks_of(std::uint64_t numel, std::uint64_t block_bytes) {
  return (numel * sizeof(float) + block_bytes - 1) / block_bytes;
}

}  // namespace

std::string_view optim_value_name(OptimValue v) {
  switch (v) {
    case OptimValue::master:
      return "master";
    case OptimValue::adam_m:
      return "adam_m";
    case OptimValue::adam_v:
      return "adam_v";
  }
  return "?";
}

std::uint64_t CheckpointTensor::numel() const {
  std::uint64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

nlohmann::json CheckpointManifest::to_json() const {
  nlohmann::json tensors_j = nlohmann::json::array();
  for (const auto& t : tensors) {
    nlohmann::json pieces = nlohmann::json::object();
    for (int v = 0; v < kOptimValues; ++v) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& p : t.pieces[v]) {
        nlohmann::json crcs = nlohmann::json::array();
        for (auto c : p.block_crc32c) crcs.push_back(crc32c_hex(c));
        list.push_back({{"file", p.file},
                        {"byte_offset", p.byte_offset},
                        {"begin", p.begin},
                        {"numel", p.numel},
                        {"crc32c", crcs}});
      }
      pieces[std::string(optim_value_name(static_cast<OptimValue>(v)))] = list;
    }
    tensors_j.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", "f32"}, {"pieces", pieces}});
  }
  return {{"format", "tierzero-checkpoint"},
          {"format_version", format_version},
          {"step", step},
          {"skipped_steps", skipped_steps},
          {"model", model.to_json()},
          {"train_config", train_config},
          {"topology", topology},
          {"plan", plan},
          {"world_size", world_size},
          {"data", data.to_json()},
          {"schedule",
           {{"max_lr", schedule.max_lr},
            {"min_lr", schedule.min_lr},
            {"warmup_steps", schedule.warmup_steps},
            {"decay_steps", schedule.decay_steps},
            {"schedule_step", step - skipped_steps},
            {"next_lr", lr_at(schedule, step - skipped_steps)}}},
          {"rng", {{"init_seed", init_seed}, {"data_seed", data.seed}, {"data_position", data.position}}},
          {"block_bytes", block_bytes},
          {"files", files},
          {"tensors", tensors_j}};
}

CheckpointManifest CheckpointManifest::from_json(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  f.allow_only({"format", "format_version", "step", "skipped_steps", "model", "train_config", "topology",
                "plan", "world_size", "data", "schedule", "rng", "block_bytes", "files", "tensors"});
  if (f.str("format") != "tierzero-checkpoint")
    f.fail("format",
           fmt::format("must be \"tierzero-checkpoint\", got \"{}\"", text_excerpt(f.str("format"))));
  CheckpointManifest m;
  m.format_version = count(f, "format_version");
  if (m.format_version != kCheckpointFormatVersion)
    f.fail("format_version",
           fmt::format("expected {}, found {}", kCheckpointFormatVersion, m.format_version));
  m.step = count(f, "step");
  m.skipped_steps = count(f, "skipped_steps");
  if (m.skipped_steps > m.step)
    f.fail("skipped_steps", fmt::format("{} exceeds step {}", m.skipped_steps, m.step));
  m.model = GptConfig::from_json(f.raw("model"), where + ": model");
  m.train_config = f.raw("train_config");
  m.topology = f.raw("topology");
  m.plan = f.raw("plan");
  m.world_size = count(f, "world_size");
  m.data = DataCursor::from_json(f.raw("data"), where + ": data");
  {
    JsonFields s(f.raw("schedule"), where + ": schedule");
    s.allow_only({"max_lr", "min_lr", "warmup_steps", "decay_steps", "schedule_step", "next_lr"});
    m.schedule = {.max_lr = static_cast<float>(s.number("max_lr")),
                  .min_lr = static_cast<float>(s.number("min_lr")),
                  .warmup_steps = count(s, "warmup_steps"),
                  .decay_steps = count(s, "decay_steps")};
  }
  {
    JsonFields r(f.raw("rng"), where + ": rng");
    r.allow_only({"init_seed", "data_seed", "data_position"});
    m.init_seed = u64(r, "init_seed");
  }
  m.block_bytes = u64(f, "block_bytes");
  if (m.block_bytes == 0 || m.block_bytes % sizeof(float) != 0)
    f.fail("block_bytes", fmt::format("must be a positive multiple of 4, got {}", m.block_bytes));
  const auto& files = f.raw("files");
  if (!files.is_object()) f.fail("files", "must be an object of file sizes");
  for (const auto& [name, size] : files.items()) {
    if (!size.is_number_unsigned())
      f.fail("files", fmt::format("size of '{}' must be an integer", text_excerpt(name)));
    if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
      f.fail("files", fmt::format("'{}' is not a plain file name", text_excerpt(name)));
    m.files[name] = size.get<std::uint64_t>();
  }
  const auto& tensors = f.raw("tensors");
  if (!tensors.is_array()) f.fail("tensors", "must be an array");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string tw = fmt::format("{}: tensors[{}]", where, i);
    JsonFields t(tensors[i], tw);
    t.allow_only({"name", "shape", "dtype", "pieces"});
    CheckpointTensor ct;
    ct.name = t.str("name");
    const auto& shape = t.raw("shape");
    if (!shape.is_array()) t.fail("shape", "must be an array of sizes");
    for (const auto& s : shape) {
      if (!s.is_number_unsigned())
        t.fail("shape", fmt::format("must hold sizes, got {}", json_excerpt(shape)));
      ct.shape.push_back(s.get<std::uint64_t>());
    }
    if (t.str("dtype") != "f32")
      t.fail("dtype", fmt::format("expected \"f32\", found \"{}\"", text_excerpt(t.str("dtype"))));
    const std::string shown = text_excerpt(ct.name);
    JsonFields pieces(t.raw("pieces"), tw + " (" + shown + "): pieces");
    pieces.allow_only({"master", "adam_m", "adam_v"});
    for (int v = 0; v < kOptimValues; ++v) {
      const std::string key(optim_value_name(static_cast<OptimValue>(v)));
      if (!pieces.has(key)) continue;  // check_against names the missing state
      const auto& list = pieces.raw(key);
      if (!list.is_array()) pieces.fail(key, "must be an array of pieces");
      for (std::size_t k = 0; k < list.size(); ++k) {
        const std::string pw = fmt::format("{} ({}): pieces.{}[{}]", tw, shown, key, k);
        JsonFields p(list[k], pw);
        p.allow_only({"file", "byte_offset", "begin", "numel", "crc32c"});
        CheckpointPiece cp{p.str("file"), u64(p, "byte_offset"), u64(p, "begin"), u64(p, "numel"), {}};
        const auto& crcs = p.raw("crc32c");
        if (!crcs.is_array()) p.fail("crc32c", "must be an array of checksums");
        for (const auto& c : crcs) cp.block_crc32c.push_back(parse_crc(c, pw + ": crc32c"));
        ct.pieces[v].push_back(std::move(cp));
      }
      std::sort(ct.pieces[v].begin(), ct.pieces[v].end(),
                [](const CheckpointPiece& a, const CheckpointPiece& b) { return a.begin < b.begin; });
    }
    m.tensors.push_back(std::move(ct));
  }
  return m;
}

void CheckpointManifest::check_against(const ParameterLayout& layout, const std::string& where) const {
  const GptConfig& want = layout.config();
  const std::pair<const char*, std::pair<int, int>> keys[] = {
      {"n_layer", {want.n_layer, model.n_layer}},
      {"n_embd", {want.n_embd, model.n_embd}},
      {"n_head", {want.n_head, model.n_head}},
      {"n_positions", {want.n_positions, model.n_positions}},
      {"vocab_size", {want.vocab_size, model.vocab_size}}};
  std::vector<std::string> diffs;
  for (const auto& [key, v] : keys)
    if (v.first != v.second) diffs.push_back(fmt::format("{} expected {}, found {}", key, v.first, v.second));
  if (!diffs.empty()) fail_input("{}: a checkpoint of another model: {}", where, fmt::join(diffs, "; "));

  std::map<std::string, const CheckpointTensor*> by_name;
  for (const auto& t : tensors)
    if (!by_name.emplace(t.name, &t).second)
      fail_input("{}: tensor '{}' is listed twice", where, text_excerpt(t.name));
  for (const auto& pt : layout.tensors()) {
    auto it = by_name.find(pt.name);
    if (it == by_name.end()) fail_input("{}: tensor '{}' is missing", where, pt.name);
    const CheckpointTensor& t = *it->second;
    const std::vector<std::uint64_t> shape(pt.shape.begin(), pt.shape.end());
    if (t.shape != shape)
      fail_input("{}: tensor '{}': expected shape [{}], found [{}]", where, t.name, fmt::join(shape, ", "),
                 fmt::join(t.shape, ", "));
    by_name.erase(it);
    for (int v = 0; v < kOptimValues; ++v) {
      const auto state = optim_value_name(static_cast<OptimValue>(v));
      std::uint64_t next = 0;
      if (t.pieces[v].empty() && t.numel() > 0)
        fail_input("{}: tensor '{}' ({}) is missing: no piece holds it", where, t.name, state);
      for (const auto& p : t.pieces[v]) {
        if (p.begin > next)
          fail_input("{}: tensor '{}' ({}): elements [{}, {}) are in no piece", where, t.name, state, next,
                     p.begin);
        if (p.begin < next)
          fail_input("{}: tensor '{}' ({}): pieces overlap at element {}", where, t.name, state, p.begin);
        if (p.numel == 0 || p.numel > t.numel() - p.begin)
          fail_input(
              "{}: tensor '{}' ({}): a piece of {} elements at element {} does not fit in its {} elements",
              where, t.name, state, p.numel, p.begin, t.numel());
        next = p.begin + p.numel;
        const std::uint64_t blocks = blocks_of(p.numel, block_bytes);
        if (p.block_crc32c.size() != blocks)
          fail_input("{}: tensor '{}' ({}) piece at element {}: expected {} checksums, found {}", where,
                     t.name, state, p.begin, blocks, p.block_crc32c.size());
        auto f = files.find(p.file);
        if (f == files.end())
          fail_input("{}: tensor '{}' ({}): file '{}' is not listed in files", where, t.name, state,
                     text_excerpt(p.file));
        if (p.byte_offset + p.numel * sizeof(float) > f->second)
          fail_input("{}: tensor '{}' ({}): bytes [{}, {}) lie outside file '{}' of {} bytes", where, t.name,
                     state, p.byte_offset, p.byte_offset + p.numel * sizeof(float), p.file, f->second);
      }
      if (next != t.numel())
        fail_input("{}: tensor '{}' ({}): elements [{}, {}) are in no piece", where, t.name, state, next,
                   t.numel());
    }
  }
  if (!by_name.empty())
    fail_input("{}: tensor '{}' is not a tensor of this model", where, text_excerpt(by_name.begin()->first));
}

const CheckpointTensor& CheckpointManifest::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t;
  fail_input("checkpoint: tensor '{}' is missing", name);
}

}  // namespace tz
