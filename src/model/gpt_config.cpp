#include "model/gpt_config.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {
namespace {

struct Preset {
  const char* name;
  GptConfig config;
};

// The demo and benchmark shapes of issue 4 (mirrored by configs/*.json, a test keeps them equal),
// and published shapes for the planner: GPT-2 124M and GPT-NeoX-20B.
const Preset kPresets[] = {
    {"gpt-tiny", {.n_layer = 4, .n_embd = 128, .n_head = 4, .n_positions = 128, .vocab_size = 256}},
    {"gpt-small", {.n_layer = 6, .n_embd = 384, .n_head = 6, .n_positions = 256, .vocab_size = 256}},
    {"gpt2", {.n_layer = 12, .n_embd = 768, .n_head = 12, .n_positions = 1024, .vocab_size = 50257}},
    {"gpt-neox-20b", {.n_layer = 44, .n_embd = 6144, .n_head = 64, .n_positions = 2048, .vocab_size = 50432}},
};

}  // namespace

void GptConfig::validate(std::string_view origin) const {
  auto positive = [&](const char* key, int v) {
    if (v <= 0) fail_input("model config {}: key '{}' must be a positive integer, got {}", origin, key, v);
  };
  positive("n_layer", n_layer);
  positive("n_embd", n_embd);
  positive("n_head", n_head);
  positive("n_positions", n_positions);
  positive("vocab_size", vocab_size);
  if (n_embd % n_head != 0)
    fail_input("model config {}: key 'n_head' ({}) must divide n_embd ({})", origin, n_head, n_embd);
}

GptConfig GptConfig::from_json(const nlohmann::json& doc, std::string_view origin) {
  JsonFields f(doc, fmt::format("model config {}", origin));
  f.allow_only(
      {"n_layer", "n_embd", "n_head", "n_positions", "vocab_size", "n_ctx", "model_type", "description"});
  auto int_key = [&](const char* key) {
    long long v = f.integer(key);
    if (v <= 0 || v > (1LL << 30)) f.fail(key, fmt::format("must be a positive integer, got {}", v));
    return static_cast<int>(v);
  };
  GptConfig c;
  c.n_layer = int_key("n_layer");
  c.n_embd = int_key("n_embd");
  c.n_head = int_key("n_head");
  c.n_positions = int_key("n_positions");
  c.vocab_size = int_key("vocab_size");
  if (f.has("n_ctx") && f.integer("n_ctx") != c.n_positions)
    f.fail("n_ctx", fmt::format("must equal n_positions ({}), got {}", c.n_positions, f.integer("n_ctx")));
  if (f.has("model_type") && f.str("model_type") != "gpt2")
    f.fail("model_type", fmt::format("must be \"gpt2\", got \"{}\"", f.str("model_type")));
  c.validate(origin);
  return c;
}

GptConfig GptConfig::load(std::string_view preset_or_path) {
  for (const auto& p : kPresets)
    if (preset_or_path == p.name) return p.config;
  std::string path(preset_or_path);
  if (!std::filesystem::exists(path)) {
    std::string names;
    for (const auto& p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p.name);
    fail_input("model config {}: no such file or preset (presets: {})", path, names);
  }
  return from_json(read_json_file(path), path);
}

std::vector<std::string> GptConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

nlohmann::json GptConfig::to_json() const {
  return {{"n_layer", n_layer},
          {"n_embd", n_embd},
          {"n_head", n_head},
          {"n_positions", n_positions},
          {"vocab_size", vocab_size}};
}

}  // namespace tz
