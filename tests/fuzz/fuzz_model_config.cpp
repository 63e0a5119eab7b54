// Fuzzes both model-config readers: GptConfig::from_json (GPT-2 config.json keys, `train --model`)
// and model_preset_from_json (models/*.json, every `--model`), after strict parsing. A config
// that reads must read back from its to_json.
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "fuzz_check.hpp"
#include "model/gpt_config.hpp"
#include "model/model_preset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  if (!tz::fuzz::reads_or_input_error([&] { doc = tz::parse_json_strict(text, "model fuzz.json"); }))
    return 0;

  tz::GptConfig cfg;
  if (tz::fuzz::reads_or_input_error([&] { cfg = tz::GptConfig::from_json(doc, "fuzz.json"); })) {
    tz::GptConfig back;
    tz::fuzz::expect(
        tz::fuzz::reads_or_input_error([&] { back = tz::GptConfig::from_json(cfg.to_json(), "back"); }),
        "GptConfig::to_json does not read back");
    tz::fuzz::expect(back == cfg, "GptConfig to_json -> from_json changes the config");
    tz::fuzz::expect(cfg.n_embd % cfg.n_head == 0 && cfg.head_size() > 0,
                     "a config that read has a bad head size");
  }
  tz::ModelPreset shape;
  if (tz::fuzz::reads_or_input_error([&] { shape = tz::model_preset_from_json(doc, "fuzz.json"); }))
    tz::fuzz::expect(shape.seq_len() > 0 && shape.config.n_layer > 0,
                     "a model shape that read is not positive");
  return 0;
}
