#include "perf/model_shape.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_presets();
}

namespace tz::perf {

ModelShape model_shape_from_json(const nlohmann::json& doc, std::string_view origin) {
  const std::string where = fmt::format("model {}", origin);
  JsonFields f(doc, where);
  f.allow_only(
      {"name", "description", "n_layer", "n_embd", "n_head", "n_positions", "vocab_size", "source", "note"});
  ModelShape m;
  m.name = f.str_or("name", std::string(origin));
  m.description = f.str_or("description", "");
  m.source = f.str_or("source", "");
  nlohmann::json shape = nlohmann::json::object();
  for (const char* key : {"n_layer", "n_embd", "n_head", "n_positions", "vocab_size"}) {
    const long long v = f.integer(key);
    if (v < 1 || v > (1LL << 30)) f.fail(key, fmt::format("must be a positive integer, got {}", v));
    shape[key] = v;
  }
  m.config = GptConfig::from_json(shape, where);
  return m;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_model_presets()) names.emplace_back(name);
  return names;
}

ModelShape load_model_shape(std::string_view preset_or_path) {
  for (const auto& [name, text] : embedded_model_presets()) {
    if (name == preset_or_path)
      return model_shape_from_json(nlohmann::json::parse(text), fmt::format("preset {}", name));
  }
  const std::string path(preset_or_path);
  if (!std::filesystem::exists(path)) {
    std::string known;
    for (const auto& n : model_preset_names()) known += (known.empty() ? "" : ", ") + n;
    fail_input("model '{}': neither a preset ({}) nor an existing file", path, known);
  }
  return model_shape_from_json(read_json_file(path), path);
}

}  // namespace tz::perf
