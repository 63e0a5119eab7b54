#include "checkpoint/safetensors_format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "core/error.hpp"
#include "core/json_read.hpp"

namespace tz {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;  // as the reference implementation

const char* dtype_code(DType t) {
  return t == DType::bf16 ? "BF16" : "F32";
}

}  // namespace

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &entries[it->second];
}

std::string safetensors_header_bytes(const std::vector<SafetensorsEntry>& entries,
                                     const std::map<std::string, std::string>& metadata) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : entries)
    j[e.name] = {{"dtype", dtype_code(e.dtype)}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  if (!metadata.empty()) j["__metadata__"] = metadata;
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + text;
}

SafetensorsHeader read_safetensors_header(const InFile& file) {
  const std::string& path = file.path();
  if (file.size() < 8) fail_input("safetensors {}: {} bytes, too short for a header", path, file.size());
  unsigned char len[8];
  file.read_at(0, len, 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes || 8 + n > file.size())
    fail_input("safetensors {}: header size {} at byte 0 does not fit the file of {} bytes", path, n,
               file.size());
  std::string text(n, '\0');
  file.read_at(8, text.data(), n);
  const nlohmann::json j = parse_json_strict(text, "safetensors " + path + ": header");
  if (!j.is_object()) fail_input("safetensors {}: the header is not a JSON object", path);
  SafetensorsHeader h;
  h.data_offset = 8 + n;
  const std::uint64_t data_bytes = file.size() - h.data_offset;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) fail_input("safetensors {}: __metadata__ must be an object", path);
      for (const auto& [k, s] : v.items())
        if (s.is_string()) h.metadata[k] = s.get<std::string>();
      continue;
    }
    const std::string& tensor = name;  // clang before 16 cannot capture a structured binding
    auto bad = [&](const std::string& what) {
      fail_input("safetensors {}: tensor '{}': {}", path, tensor, what);
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      bad("needs dtype, shape and data_offsets");
    SafetensorsEntry e;
    e.name = name;
    const std::string dt = v["dtype"].is_string() ? v["dtype"].get<std::string>() : v["dtype"].dump();
    if (dt == "F32")
      e.dtype = DType::f32;
    else if (dt == "BF16")
      e.dtype = DType::bf16;
    else
      bad(fmt::format("dtype expected F32 or BF16, found {}", dt));
    std::uint64_t numel = 1;
    if (!v["shape"].is_array()) bad("shape must be an array");
    for (const auto& s : v["shape"]) {
      if (!s.is_number_unsigned()) bad(fmt::format("shape {} must hold sizes", v["shape"].dump()));
      e.shape.push_back(s.get<std::uint64_t>());
      if (e.shape.back() != 0 && numel > data_bytes / e.shape.back())  // also keeps numel x 4 from wrapping
        bad(fmt::format("shape {} holds more elements than the data section has bytes ({})",
                        v["shape"].dump(), data_bytes));
      numel *= e.shape.back();
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad(fmt::format("data_offsets {} must be [begin, end]", off.dump()));
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.begin > e.end || e.end > data_bytes)
      bad(fmt::format("data_offsets [{}, {}) outside the data section of {} bytes", e.begin, e.end,
                      data_bytes));
    if (e.end - e.begin != numel * dtype_bytes(e.dtype))
      bad(fmt::format("expected {} bytes ({} elements of {}), found {}", numel * dtype_bytes(e.dtype), numel,
                      dt, e.end - e.begin));
    h.entries.push_back(std::move(e));
  }
  // The tensors tile the data section exactly, as the format requires: in offset order each begins
  // where the one before it ends, and the last ends with the file (no overlap, no gap, no trailing
  // bytes). Two tensors sharing bytes, or bytes no tensor owns, are refused.
  std::sort(h.entries.begin(), h.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t at = 0;
  const SafetensorsEntry* before = nullptr;
  for (const auto& e : h.entries) {
    if (e.begin < at)
      fail_input("safetensors {}: tensor '{}': data_offsets [{}, {}) overlap tensor '{}' at [{}, {})", path,
                 e.name, e.begin, e.end, before->name, before->begin, before->end);
    if (e.begin > at)
      fail_input(
          "safetensors {}: tensor '{}': data_offsets begin at {}, leaving bytes [{}, {}) that no tensor "
          "holds",
          path, e.name, e.begin, at, e.begin);
    at = e.end;
    before = &e;
  }
  if (at != data_bytes)
    fail_input("safetensors {}: the tensors end at byte {} of the data section, but it has {} bytes", path,
               at, data_bytes);
  for (std::size_t i = 0; i < h.entries.size(); ++i) h.by_name.emplace(h.entries[i].name, i);
  return h;
}

}  // namespace tz
