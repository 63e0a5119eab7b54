#include "data/data_cursor.hpp"

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace tz {
namespace {

std::uint64_t unsigned_field(const JsonFields& f, const char* key) {
  const nlohmann::json& v = f.raw(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    f.fail(key, fmt::format("must be a non-negative integer, got {:.40}", v.dump()));
  return v.get<std::uint64_t>();
}

}  // namespace

nlohmann::json DataCursor::to_json() const {
  return {{"position", position},
          {"epoch", epoch()},
          {"seed", seed},
          {"seq", seq},
          {"windows_per_epoch", windows_per_epoch},
          {"fingerprint", fmt::format("{:016x}", fingerprint)}};
}

DataCursor DataCursor::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail_input("{}: the data cursor must be a JSON object", where);
  JsonFields f(j, where);
  f.allow_only({"position", "epoch", "seed", "seq", "windows_per_epoch", "fingerprint"});
  DataCursor c;
  c.position = unsigned_field(f, "position");
  c.seed = unsigned_field(f, "seed");
  const std::uint64_t seq = unsigned_field(f, "seq");
  if (seq == 0 || seq > (1ULL << 31)) f.fail("seq", fmt::format("must be in [1, 2^31], got {}", seq));
  c.seq = static_cast<std::int64_t>(seq);
  c.windows_per_epoch = unsigned_field(f, "windows_per_epoch");
  if (c.windows_per_epoch == 0) f.fail("windows_per_epoch", "must be positive, got 0");
  const std::string hex = f.str("fingerprint");
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    f.fail("fingerprint", fmt::format("must be 16 lower-case hex digits, got '{:.40}'", hex));
  c.fingerprint = std::stoull(hex, nullptr, 16);
  if (f.has("epoch") && unsigned_field(f, "epoch") != c.epoch())
    f.fail("epoch", fmt::format("is {} but position {} / windows_per_epoch {} is epoch {}",
                                unsigned_field(f, "epoch"), c.position, c.windows_per_epoch, c.epoch()));
  return c;
}

}  // namespace tz
