#include "model/weights_file.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

ModelWeights read_parameter_file(const std::string& path) {
  const std::string side = path + ".json";
  const nlohmann::json doc = read_json_file(side, "parameter file");
  const std::string where = "parameter file " + side;
  JsonFields f(doc, where);
  f.allow_only({"config", "dtype", "numel", "tensors"});
  ModelWeights w;
  w.origin = path;
  w.config = GptConfig::from_json(f.raw("config"), side + ": config");
  if (f.str("dtype") != "f32")
    f.fail("dtype", fmt::format("must be \"f32\", got {}", json_excerpt(f.raw("dtype"))));
  const ParameterLayout layout(w.config);
  const long long numel = f.integer("numel", 0, 1LL << 40);
  if (static_cast<std::size_t>(numel) != layout.total_numel())
    f.fail("numel", fmt::format("{} does not match the config's {} parameters", numel, layout.total_numel()));
  const auto& tensors = f.raw("tensors");
  if (!tensors.is_array() || tensors.size() != layout.tensors().size())
    f.fail("tensors", fmt::format("must list the config's {} tensors, got {}", layout.tensors().size(),
                                  json_excerpt(tensors)));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const ParamTensor& want = layout.tensors()[i];
    JsonFields t(tensors[i], fmt::format("{}: tensors[{}]", where, i));
    t.allow_only({"name", "offset", "shape", "weight_decay"});
    const std::string name = t.str("name");
    if (name != want.name)
      t.fail("name", fmt::format("is \"{}\", expected \"{}\"", text_excerpt(name), want.name));
    if (static_cast<std::size_t>(t.integer("offset", 0, 1LL << 40)) != want.offset)
      t.fail("offset", fmt::format("of {} is {}, expected {}", want.name, t.integer("offset"), want.offset));
    if (t.raw("shape") != nlohmann::json(want.shape))
      t.fail("shape", fmt::format("of {} is {}, expected {}", want.name, json_excerpt(t.raw("shape")),
                                  nlohmann::json(want.shape).dump()));
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) fail_input("parameter file {}: cannot read its size: {}", path, ec.message());
  if (bytes != layout.total_numel() * sizeof(float))
    fail_input("parameter file {}: {} bytes, but {} fp32 parameters are {} bytes", path, bytes,
               layout.total_numel(), layout.total_numel() * sizeof(float));
  w.params.resize(layout.total_numel());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) fail_input("parameter file {}: cannot open for reading", path);
  if (std::fread(w.params.data(), sizeof(float), w.params.size(), in.get()) != w.params.size())
    fail_input("parameter file {}: read failed", path);
  return w;
}

}  // namespace tz
