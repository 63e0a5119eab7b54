// Fuzzes the training-config reader (DeepSpeed-style JSON + the "tierzero" section): strict parsing
// and TrainConfig::from_json. A config that reads must write back (to_json) to a document that reads
// to the same config.
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "fuzz_check.hpp"
#include "train/train_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tz::TrainConfig cfg;
  if (!tz::fuzz::reads_or_input_error([&] {
        cfg = tz::TrainConfig::from_json(tz::parse_json_strict(text, "config fuzz.json"), "fuzz.json");
      }))
    return 0;
  const nlohmann::json written = cfg.to_json();
  tz::TrainConfig back;
  tz::fuzz::expect(
      tz::fuzz::reads_or_input_error([&] { back = tz::TrainConfig::from_json(written, "back"); }),
      "to_json of a config that read does not read back");
  tz::fuzz::expect(back.to_json() == written, "to_json -> from_json -> to_json changes the config");
  return 0;
}
