#include "model/parameter_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {

void write_parameter_file(const std::string& path, const ParameterLayout& layout, const float* params) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail_input("{}: cannot open for writing", path);
  out.write(reinterpret_cast<const char*>(params),
            static_cast<std::streamsize>(layout.total_numel() * sizeof(float)));
  if (!out) fail_input("{}: write failed", path);
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : layout.tensors())
    tensors.push_back(
        {{"name", t.name}, {"offset", t.offset}, {"shape", t.shape}, {"weight_decay", t.weight_decay}});
  nlohmann::json doc = {{"config", layout.config().to_json()},
                        {"dtype", "f32"},
                        {"numel", layout.total_numel()},
                        {"tensors", tensors}};
  std::ofstream side(path + ".json");
  if (!side) fail_input("{}.json: cannot open for writing", path);
  side << doc.dump(1) << "\n";
}

std::vector<float> read_parameter_file(const std::string& path, const ParameterLayout& layout) {
  nlohmann::json doc = read_json_file(path + ".json");
  if (!doc.contains("config") || GptConfig::from_json(doc["config"], path + ".json") != layout.config())
    fail_input("{}: parameters of another model config ({} expected)", path,
               layout.config().to_json().dump());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail_input("{}: cannot open file", path);
  const auto bytes = static_cast<std::size_t>(in.tellg());
  if (bytes != layout.total_numel() * sizeof(float))
    fail_input("{}: {} bytes, expected {} ({} floats)", path, bytes, layout.total_numel() * sizeof(float),
               layout.total_numel());
  std::vector<float> params(layout.total_numel());
  in.seekg(0);
  in.read(reinterpret_cast<char*>(params.data()), static_cast<std::streamsize>(bytes));
  return params;
}

}  // namespace tz
