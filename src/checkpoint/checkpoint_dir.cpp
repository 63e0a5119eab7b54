#include "checkpoint/checkpoint_dir.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/crc32c.hpp"
#include "core/error.hpp"
#include "core/json_excerpt.hpp"
#include "core/json_fields.hpp"
#include "core/json_read.hpp"

namespace tz {
namespace fs = std::filesystem;

std::string step_dir_name(int step) {
  return fmt::format("step_{}", step);
}

std::optional<int> parse_step_dir(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() == 5 || name.size() > 15) return std::nullopt;
  long long v = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  if (v > (1LL << 31) - 1) return std::nullopt;
  return static_cast<int>(v);
}

std::string rank_file_name(int rank) {
  return fmt::format("rank_{:05d}.bin", rank);
}

std::string marker_text(const CompletionMarker& m) {
  return nlohmann::json{{"step", m.step},
                        {"manifest_bytes", m.manifest_bytes},
                        {"manifest_crc32c", crc32c_hex(m.manifest_crc32c)}}
             .dump() +
         "\n";
}

CompletionMarker parse_marker(std::string_view text, const std::string& where) {
  const nlohmann::json j = parse_json_strict(text, where);
  JsonFields f(j, where);
  f.allow_only({"step", "manifest_bytes", "manifest_crc32c"});
  CompletionMarker m;
  m.step = static_cast<int>(f.integer("step", 0, INT_MAX));
  m.manifest_bytes = static_cast<std::uint64_t>(f.integer("manifest_bytes", 0, LLONG_MAX));
  const std::string crc = f.str("manifest_crc32c");
  if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos)
    f.fail("manifest_crc32c", fmt::format("must be 8 lowercase hex digits, got \"{}\"", text_excerpt(crc)));
  m.manifest_crc32c = static_cast<std::uint32_t>(std::stoul(crc, nullptr, 16));
  return m;
}

std::optional<CompletionMarker> read_marker(const std::string& dir) {
  const std::string path = (fs::path(dir) / kCompleteFile).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return parse_marker(read_small_file(path), "checkpoint " + path);
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& save_dir) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    if (!e.is_directory()) continue;
    auto step = parse_step_dir(e.path().filename().string());
    if (!step) continue;
    bool complete = false;
    try {
      complete = read_marker(e.path().string()).has_value();
    } catch (const InputError&) {
      complete = false;  // an unreadable marker: not a checkpoint
    }
    out.push_back({*step, e.path().string(), complete});
  }
  if (ec) fail_input("checkpoint: cannot list {}: {}", save_dir, ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

ResolvedCheckpoint resolve_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) fail_input("checkpoint: {} is not a directory", path);
  if (fs::exists(fs::path(path) / kManifestFile, ec) || fs::exists(fs::path(path) / kCompleteFile, ec) ||
      parse_step_dir(fs::path(path).filename().string())) {
    if (!read_marker(path))
      fail_input("checkpoint: {} is not a complete checkpoint: it has no {} marker (its save did not finish)",
                 path, kCompleteFile);
    return {path, ""};
  }
  // One rule for `latest`: when it names a complete checkpoint that is the one; in every other case
  // (missing, empty, unreadable, not a step_N name, naming a step that is gone or incomplete) the
  // newest complete checkpoint is taken, with a note saying why.
  std::string note;
  const fs::path latest = fs::path(path) / kLatestFile;
  if (fs::exists(latest, ec)) {
    std::string name;
    try {
      name = read_small_file(latest.string());
    } catch (const InputError& e) {
      name.clear();
      note = fmt::format("{} cannot be read ({})", latest.string(), e.what());
    }
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (note.empty() && !parse_step_dir(name)) {
      note = fmt::format("{} names '{}', not a step_N directory", latest.string(), text_excerpt(name));
    } else if (note.empty()) {
      const std::string dir = (fs::path(path) / name).string();
      bool complete = false;
      try {
        complete = fs::is_directory(dir, ec) && read_marker(dir).has_value();
      } catch (const InputError&) {  // an unreadable marker: not a complete checkpoint
      }
      if (complete) return {dir, ""};
      note = fmt::format("{} names {}, which is not a complete checkpoint", latest.string(), name);
    }
  } else {
    note = fmt::format("{} has no '{}' file", path, kLatestFile);
  }
  const auto all = list_checkpoints(path);
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (it->complete)
      return {it->path, note + fmt::format("; using the newest complete checkpoint, {}", it->path)};
  fail_input("checkpoint: no complete checkpoint in {} ({})", path, note);
}

std::vector<std::string> rotate_checkpoints(const std::string& save_dir, int step, int keep) {
  std::vector<std::string> removed;
  auto remove = [&](const std::string& p, bool complete) {
    if (complete) {  // first unmark it, so a crash while deleting never leaves a partial "checkpoint"
      remove_tree((fs::path(p) / kCompleteFile).string());
      sync_directory(p);
    }
    remove_tree(p);
    removed.push_back(p);
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.size() > 4 && name.ends_with(".tmp") &&
        parse_step_dir(name.substr(0, name.size() - 4)))
      remove(e.path().string(), false);
  }
  std::vector<CheckpointEntry> older;
  for (const auto& c : list_checkpoints(save_dir)) {
    if (c.step == step) continue;
    if (!c.complete)
      remove(c.path, false);
    else if (c.step < step)
      older.push_back(c);
  }
  if (keep > 0)
    for (int i = 0; i + (keep - 1) < static_cast<int>(older.size()); ++i) remove(older[i].path, true);
  if (!removed.empty()) sync_directory(save_dir);
  return removed;
}

}  // namespace tz
