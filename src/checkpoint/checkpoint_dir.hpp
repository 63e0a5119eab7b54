// The save directory of a run and the atomic protocol's names (docs/checkpoint.md):
//   DIR/step_N.tmp/   a checkpoint being written (never read)
//   DIR/step_N/       renamed from step_N.tmp once every rank's file and the manifest are durable
//   DIR/step_N/COMPLETE  the completion marker, written last: {"step", "manifest_bytes",
//                        "manifest_crc32c"}; a directory without it is not a checkpoint
//   DIR/latest        "step_N": the checkpoint written last, updated after its marker
// So a crash at any point leaves every complete checkpoint intact, and `latest` names a complete one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kCompleteFile = "COMPLETE";
inline constexpr const char* kLatestFile = "latest";

std::string step_dir_name(int step);                         // "step_12"
std::optional<int> parse_step_dir(const std::string& name);  // 12 for "step_12", else none
std::string rank_file_name(int rank);                        // "rank_00003.bin"

struct CompletionMarker {
  int step = 0;
  std::uint64_t manifest_bytes = 0;
  std::uint32_t manifest_crc32c = 0;
};
std::string marker_text(const CompletionMarker& m);
// The text of a COMPLETE file; InputError naming `where` and the key.
CompletionMarker parse_marker(std::string_view text, const std::string& where);
// The marker of checkpoint directory `dir`; none when it has no COMPLETE file. InputError naming the
// file when it exists but cannot be read as a marker.
std::optional<CompletionMarker> read_marker(const std::string& dir);

struct CheckpointEntry {
  int step = 0;
  std::string path;
  bool complete = false;
};
// The step_N directories of a save directory (not the .tmp ones), by step.
std::vector<CheckpointEntry> list_checkpoints(const std::string& save_dir);

struct ResolvedCheckpoint {
  std::string path;  // the step directory
  std::string note;  // why it is not simply `latest` (empty when it is)
};
// `path` is a checkpoint (a step directory) or a save directory (its latest complete checkpoint: the
// one `latest` names; when `latest` is missing, empty, unreadable or names anything but a complete
// checkpoint, the complete one of the largest step, with a note saying why). InputError when there is
// none, or when a step directory has no completion marker.
ResolvedCheckpoint resolve_checkpoint(const std::string& path);

// After the checkpoint of `step` is complete and `latest`: removes the complete checkpoints of
// smaller steps beyond the newest keep - 1 (keep 0: none), and every incomplete or temporary
// checkpoint directory but the one of `step` (leftovers of crashed saves). Checkpoints of larger steps
// (another run's, resumed from earlier) are left alone. Returns the removed paths.
std::vector<std::string> rotate_checkpoints(const std::string& save_dir, int step, int keep);

}  // namespace tz
