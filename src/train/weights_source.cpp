#include "train/weights_source.hpp"

#include <filesystem>

#include "checkpoint/weight_export.hpp"
#include "core/error.hpp"
#include "model/gpt_config.hpp"
#include "train/exported_weights.hpp"

namespace tz {

ModelWeights read_checkpoint_weights(const std::string& dir) {
  try {
    return read_checkpoint_weights_flat(dir);
  } catch (const InputError& e) {
    fail_input("--weights {}: a directory, read as a tierzero checkpoint: {}", dir, e.what());
  }
}

namespace {

// The weights as the file holds them, of whatever architecture its config describes.
ModelWeights read_weights_file(const std::string& path, const std::optional<GptConfig>& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return read_checkpoint_weights(path);
  if (fs::exists(path + ".json", ec)) return read_parameter_file(path);
  if (!fs::exists(path, ec)) fail_input("--weights {}: no such file (nor {}.json)", path, path);
  if (fs::path(path).extension() == ".safetensors") {
    if (model) return read_safetensors_gpt2(path, *model);
    const fs::path beside = fs::path(path).parent_path() / "config.json";
    if (!fs::exists(beside, ec))
      fail_input(
          "--weights {}: a safetensors file does not hold the model's shape (n_head): pass --model, or put "
          "its config.json beside it",
          path);
    const GptConfig config = GptConfig::load(beside.string());
    return read_safetensors_gpt2(path, config);
  }
  if (has_llmc_model_magic(path)) return read_llmc_model(path);
  fail_input(
      "--weights {}: not a parameter file (no {}.json beside it), checkpoint directory, .safetensors or "
      "llm.c model file (magic {})",
      path, path, kLlmcModelMagic);
}

}  // namespace

ModelWeights load_model_weights(const std::string& path, const std::optional<GptConfig>& model) {
  // Checkpoints, parameter files and safetensors (by each family's Hugging Face names) carry any
  // architecture; an llm.c file is GPT-2 by its format.
  return read_weights_file(path, model);
}

}  // namespace tz
