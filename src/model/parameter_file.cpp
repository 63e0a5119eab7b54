#include "model/parameter_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/error.hpp"
#include "core/output_file.hpp"

namespace tz {

void check_parameter_file_path(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) fail_input("{} {}: is a directory; expected a file name", option, path);
  if (fs::exists(st) && !fs::is_regular_file(st))
    fail_input(
        "{} {}: not a regular file (a device, FIFO or socket): a parameter file is two files, {} and {}.json",
        option, path, path, path);
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    fail_input("{} {}: the folder {} does not exist", option, path, parent.string());
}

void write_parameter_file(const std::string& path, const ParameterLayout& layout, const float* params) {
  check_parameter_file_path(path, "parameter file");
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
