#include "model/parameter_file.hpp"

#include <nlohmann/json.hpp>

#include "core/output_file.hpp"

namespace tz {

void write_parameter_file(const std::string& path, const ParameterLayout& layout, const float* params) {
  OutputFile out(path, "parameter file");
  out.write(params, layout.total_numel() * sizeof(float));
  out.close();
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : layout.tensors())
    tensors.push_back(
        {{"name", t.name}, {"offset", t.offset}, {"shape", t.shape}, {"weight_decay", t.weight_decay}});
  nlohmann::json doc = {{"config", layout.config().to_json()},
                        {"dtype", "f32"},
                        {"numel", layout.total_numel()},
                        {"tensors", tensors}};
  write_output_file(path + ".json", doc.dump(1) + "\n", "parameter size table");
}

}  // namespace tz
