// The safetensors file format (Hugging Face's): an 8-byte little-endian header size N, N bytes of
// JSON {"name": {"dtype": "F32"|"BF16"|..., "shape": [...], "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}} padded with spaces to a multiple of 8, then the tensor bytes,
// offsets relative to the end of the header, row-major, little-endian.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/checked_file.hpp"
#include "core/dtype.hpp"

namespace tz {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;  // F32 or BF16 (the only ones tierzero reads or writes)
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;                 // by begin
  std::unordered_map<std::string, std::size_t> by_name;  // index into entries
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  // of the data section in the file
  const SafetensorsEntry* find(const std::string& name) const;
};

// The first 8 + N bytes of a file holding `entries` (data offsets already set) and `metadata`.
std::string safetensors_header_bytes(const std::vector<SafetensorsEntry>& entries,
                                     const std::map<std::string, std::string>& metadata);

// Reads and checks the header of `file`: its size, JSON, every entry's dtype, shape and offsets
// (inside the file, size = elements x dtype size), and that the entries tile the data section exactly
// (no overlap, no gap, nothing after the last). InputError naming the file, the tensor and the
// expected and found values.
SafetensorsHeader read_safetensors_header(const InFile& file);

}  // namespace tz
