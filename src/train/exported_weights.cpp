// Exported weight files for `sample` (exported_weights.hpp): read whole on one process through the
// same checked reader that `--init-from` uses (checkpoint/model_file_reader.hpp).
#include "train/exported_weights.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/llmc_format.hpp"
#include "checkpoint/model_file_reader.hpp"
#include "core/error.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

ModelWeights read_safetensors_gpt2(const std::string& path, const GptConfig& model) {
  check_safetensors_holds_model(path, model);  // before a layout of the model's size is built
  const ParameterLayout layout(model);
  ModelFileReader reader(path, layout);
  if (reader.format() != "safetensors")
    fail_input("safetensors {}: starts with llm.c's model magic: it is an llm.c checkpoint", path);
  ModelWeights w;
  w.config = model;
  w.origin = path;
  w.params = reader.read_all();
  return w;
}

bool has_llmc_model_magic(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::int32_t magic = 0;
  const bool ok = ::pread(fd, &magic, 4, 0) == 4;
  ::close(fd);
  return ok && magic == kLlmcModelMagic;
}

ModelWeights read_llmc_model(const std::string& path) {
  ModelWeights w;
  {
    const InFile file(path);
    w.config = read_llmc_header(file).model;
  }
  const ParameterLayout layout(w.config);
  ModelFileReader reader(path, layout);
  w.origin = path;
  w.params = reader.read_all();
  return w;
}

}  // namespace tz
