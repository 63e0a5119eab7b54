#include "model/model_preset.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/json_read.hpp"

namespace tz {

// models/*.json, embedded by cmake/embed_presets.cmake.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_presets();

namespace {

ModelPreset preset_from_json(const nlohmann::json& doc, std::string_view origin, std::string fallback_name) {
  ModelPreset m;
  m.config = GptConfig::from_json(doc, origin, &m.notes);  // strict: also checks the informational keys
  JsonFields f(doc, fmt::format("model config {}", origin));
  m.name = f.identifier_or("name", fallback_name);
  m.description = f.str_or("description", "");
  m.source = f.str_or("source", "");
  m.seq = static_cast<int>(f.integer_or("seq", 0, 1, m.config.n_positions));
  return m;
}

std::vector<std::string> aliases_of(const nlohmann::json& doc) {
  std::vector<std::string> out;
  if (doc.contains("aliases"))
    for (const auto& a : doc["aliases"]) out.push_back(a.get<std::string>());
  return out;
}

}  // namespace

ModelPreset model_preset_from_json(const nlohmann::json& doc, std::string_view origin) {
  return preset_from_json(doc, origin, std::string(origin));
}

ModelPreset load_model(std::string_view preset_or_path) {
  for (const auto& [name, text] : embedded_model_presets()) {
    const nlohmann::json doc = parse_json_strict(text, fmt::format("model preset {}", name));
    const auto aliases = aliases_of(doc);
    if (name == preset_or_path || std::find(aliases.begin(), aliases.end(), preset_or_path) != aliases.end())
      return preset_from_json(doc, fmt::format("preset {}", name), std::string(name));
  }
  const std::string path(preset_or_path);
  std::error_code ec;  // a path the OS cannot even look up (too long, ...) is "no such file" too
  if (!std::filesystem::exists(path, ec))
    fail_input("model '{}': neither a preset ({}) nor an existing file", text_excerpt(path, 256),
               describe_model_presets());
  return preset_from_json(read_json_file(path, "model config"), path, path);
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embedded_model_presets()) names.emplace_back(name);
  return names;
}

std::string describe_model_presets() {
  std::string out;
  for (const auto& [name, text] : embedded_model_presets()) {
    out += (out.empty() ? "" : ", ") + std::string(name);
    const auto aliases = aliases_of(nlohmann::json::parse(text));
    for (std::size_t i = 0; i < aliases.size(); ++i) out += (i == 0 ? " (or " : ", ") + aliases[i];
    if (!aliases.empty()) out += ")";
  }
  return out;
}

}  // namespace tz
