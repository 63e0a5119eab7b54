// Fuzzes the readers of a checkpoint's JSON files: the manifest (strict parsing,
// CheckpointManifest::from_json, then every check a load makes before reading a byte, against a small
// fixed model: 1 layer, width 4, vocabulary 5, 4 positions) and the completion marker (parse_marker).
// The first input byte picks the reader (even: manifest, odd: marker), the rest is the file. A
// manifest that reads must write back (to_json) to one that reads the same; a marker that reads
// must survive marker_text -> parse_marker unchanged.
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_manifest.hpp"
#include "core/json_read.hpp"
#include "fuzz_check.hpp"

namespace {

const tz::ParameterLayout& fixed_model() {
  static const tz::ParameterLayout layout(
      tz::GptConfig{.n_layer = 1, .n_embd = 4, .n_head = 1, .n_positions = 4, .vocab_size = 5});
  return layout;
}

void fuzz_manifest(std::string_view text) {
  nlohmann::json doc;
  if (!tz::fuzz::reads_or_input_error([&] { doc = tz::parse_json_strict(text, "checkpoint manifest.json"); }))
    return;
  tz::CheckpointManifest m;
  if (!tz::fuzz::reads_or_input_error([&] { m = tz::CheckpointManifest::from_json(doc, "manifest.json"); }))
    return;
  const nlohmann::json written = m.to_json();
  tz::CheckpointManifest back;
  tz::fuzz::expect(
      tz::fuzz::reads_or_input_error([&] { back = tz::CheckpointManifest::from_json(written, "back"); }),
      "CheckpointManifest::to_json does not read back");
  tz::fuzz::expect(back.to_json() == written, "manifest to_json -> from_json changes the manifest");
  tz::fuzz::reads_or_input_error([&] {
    m.check_against(fixed_model(), "manifest.json");
    // A manifest that passes every check names each tensor of the model once, each state tiled.
    for (const auto& pt : fixed_model().tensors()) {
      const tz::CheckpointTensor& t = m.tensor(pt.name);
      for (const auto& pieces : t.pieces) {
        std::uint64_t covered = 0;
        for (const auto& p : pieces) covered += p.numel;
        tz::fuzz::expect(covered == pt.numel, "checked pieces do not tile their tensor");
      }
    }
  });
}

void fuzz_marker(std::string_view text) {
  tz::CompletionMarker m;
  if (!tz::fuzz::reads_or_input_error([&] { m = tz::parse_marker(text, "checkpoint COMPLETE"); })) return;
  tz::CompletionMarker back;
  tz::fuzz::expect(
      tz::fuzz::reads_or_input_error([&] { back = tz::parse_marker(tz::marker_text(m), "back"); }),
      "marker_text does not read back");
  tz::fuzz::expect(back.step == m.step && back.manifest_bytes == m.manifest_bytes &&
                       back.manifest_crc32c == m.manifest_crc32c,
                   "marker_text -> parse_marker changes the marker");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1)
    fuzz_marker(text);
  else
    fuzz_manifest(text);
  return 0;
}
