#include "model/weights_file.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/error.hpp"
#include "core/finite_scan.hpp"
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
  // Sizes first, from the config alone: a config of 100000 layers beside a small file is refused
  // before a layout of that size is built.
  const std::uint64_t count = w.config.parameter_count();
  const long long numel = f.integer("numel", 0, 1LL << 40);
  if (static_cast<std::uint64_t>(numel) != count)
    f.fail("numel", fmt::format("{} does not match the config's {} parameters", numel, count));
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) fail_input("parameter file {}: cannot read its size: {}", path, ec.message());
  if (bytes != count * sizeof(float))
    fail_input("parameter file {}: {} bytes, but {} fp32 parameters are {} bytes", path, bytes, count,
               count * sizeof(float));
  const ParameterLayout layout(w.config);
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
  w.params.resize(layout.total_numel());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) fail_input("parameter file {}: cannot open for reading", path);
  if (std::fread(w.params.data(), sizeof(float), w.params.size(), in.get()) != w.params.size())
    fail_input("parameter file {}: read failed", path);
  for (const ParamTensor& t : layout.tensors())
    if (const std::size_t bad = first_nonfinite(w.params.data() + t.offset, t.numel); bad < t.numel)
      fail_input("parameter file {}: tensor '{}' element {} is {}: a model file's weights must be finite",
                 path, t.name, bad, w.params[t.offset + bad]);
  return w;
}

}  // namespace tz
