// The position of a run in its global stream of windows (data_loader.hpp), small and exact: saved
// with a checkpoint and restored at the same or another world size or batch. `position` counts the
// windows all ranks together have consumed; the other fields say which stream it is a position in,
// so a cursor restored on other data, another sequence length or another seed is an error, never
// a silent jump.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tz {

struct DataCursor {
  std::uint64_t position = 0;           // windows of the global stream consumed so far
  std::uint64_t seed = 0;               // the order's seed
  std::int64_t seq = 0;                 // T: a window is T + 1 tokens
  std::uint64_t windows_per_epoch = 0;  // W
  std::uint64_t fingerprint = 0;        // ShardSet::fingerprint of the data

  std::uint64_t epoch() const { return windows_per_epoch == 0 ? 0 : position / windows_per_epoch; }
  bool operator==(const DataCursor&) const = default;

  // {"position": 1234, "epoch": 0, "seed": 7, "seq": 64, "windows_per_epoch": 5000,
  //  "fingerprint": "0123456789abcdef"}: integers exact, the fingerprint as 16 hex digits
  // ("epoch" is informative: position / windows_per_epoch).
  nlohmann::json to_json() const;
  // InputError naming `where` and the key on a missing or unknown key, a wrong type, a negative or
  // non-integer value, a bad fingerprint, or an "epoch" that disagrees with the position.
  static DataCursor from_json(const nlohmann::json& j, const std::string& where);
};

}  // namespace tz
