#include "checkpoint/checkpoint_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/crc32c.hpp"
#include "core/error.hpp"
#include "core/json_read.hpp"

namespace tz {
namespace fs = std::filesystem;

CheckpointReader::CheckpointReader(std::string dir) : dir_(std::move(dir)) {
  const auto marker = read_marker(dir_);
  if (!marker)
    fail_input("checkpoint: {} is not a complete checkpoint: it has no {} marker", dir_, kCompleteFile);
  const std::string path = (fs::path(dir_) / kManifestFile).string();
  const std::string text = read_small_file(path);
  const std::uint32_t crc = crc32c(0, text.data(), text.size());
  if (text.size() != marker->manifest_bytes)
    fail_input("checkpoint {}: expected {} bytes (as {} says), found {}", path, marker->manifest_bytes,
               kCompleteFile, text.size());
  if (crc != marker->manifest_crc32c)
    fail_input("checkpoint {}: crc32c expected {} (as {} says), found {}", path,
               crc32c_hex(marker->manifest_crc32c), kCompleteFile, crc32c_hex(crc));
  const nlohmann::json j = parse_json_strict(text, "checkpoint " + path);
  manifest_ = CheckpointManifest::from_json(j, "checkpoint " + path);
  if (manifest_.step != marker->step)
    fail_input("checkpoint {}: step {} but {} says {}", path, manifest_.step, kCompleteFile, marker->step);
}

InFile& CheckpointReader::file(const std::string& name, const CheckpointTensor& t, OptimValue which) {
  auto it = files_.find(name);
  if (it != files_.end()) return *it->second;
  const std::string path = (fs::path(dir_) / name).string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail_input("checkpoint {}: file is missing (it holds tensor '{}' ({}))", path, t.name,
               optim_value_name(which));
  auto f = std::make_unique<InFile>(path);
  const std::uint64_t want = manifest_.files.at(name);
  if (f->size() != want)
    fail_input("checkpoint {}: tensor '{}' ({}): the file has {} bytes, expected {}{}", path, t.name,
               optim_value_name(which), f->size(), want, f->size() < want ? " (truncated)" : "");
  return *files_.emplace(name, std::move(f)).first->second;
}

void CheckpointReader::read(const CheckpointTensor& t, OptimValue which, std::uint64_t begin, std::uint64_t n,
                            float* out) {
  const auto& pieces = t.pieces[static_cast<int>(which)];
  const std::uint64_t block_elems = manifest_.block_bytes / sizeof(float);
  const std::uint64_t end = begin + n;
  // The first piece that ends after `begin` (pieces are sorted and tile the tensor).
  auto it = std::upper_bound(pieces.begin(), pieces.end(), begin,
                             [](std::uint64_t b, const CheckpointPiece& p) { return b < p.begin + p.numel; });
  std::uint64_t at = begin;
  for (; at < end && it != pieces.end(); ++it) {
    const CheckpointPiece& p = *it;
    InFile& f = file(p.file, t, which);
    const std::uint64_t lo = std::max(at, p.begin) - p.begin, hi = std::min(end, p.begin + p.numel) - p.begin;
    for (std::uint64_t k = lo / block_elems; k * block_elems < hi; ++k) {
      const std::uint64_t b0 = k * block_elems, b1 = std::min(p.numel, b0 + block_elems);
      const bool whole = b0 >= lo && b1 <= hi;
      float* dst;
      if (whole) {
        dst = out + (p.begin + b0 - begin);
      } else {
        block_.resize(block_elems);
        dst = block_.data();
      }
      const std::uint64_t byte0 = p.byte_offset + b0 * sizeof(float), bytes = (b1 - b0) * sizeof(float);
      f.read_at(byte0, dst, bytes);
      bytes_read_ += bytes;
      const std::uint32_t crc = crc32c(0, dst, bytes);
      if (crc != p.block_crc32c[k])
        fail_input(
            "checkpoint {}: tensor '{}' ({}) elements [{}, {}) at bytes [{}, {}): crc32c expected {}, found "
            "{}",
            f.path(), t.name, optim_value_name(which), p.begin + b0, p.begin + b1, byte0, byte0 + bytes,
            crc32c_hex(p.block_crc32c[k]), crc32c_hex(crc));
      if (!whole) {
        const std::uint64_t c0 = std::max(b0, lo), c1 = std::min(b1, hi);
        std::copy_n(dst + (c0 - b0), c1 - c0, out + (p.begin + c0 - begin));
      }
    }
    at = p.begin + hi;
  }
  TZ_CHECK(at >= end, "tensor {} elements [{}, {}) not covered", t.name, at, end);
}

StateReader CheckpointReader::state_reader(const ParameterLayout& params) {
  std::vector<const CheckpointTensor*> by_index;
  for (const auto& pt : params.tensors()) by_index.push_back(&manifest_.tensor(pt.name));
  return
      [this, &params, by_index](OptimValue which, int range, std::size_t offset, std::size_t n, float* out) {
        const auto& tensors = params.tensors();
        for (std::size_t i = 0; i < tensors.size(); ++i) {
          const ParamTensor& pt = tensors[i];
          if (pt.range != range) continue;
          const std::size_t a = std::max(offset, pt.range_offset),
                            b = std::min(offset + n, pt.range_offset + pt.numel);
          if (a >= b) continue;
          read(*by_index[i], which, a - pt.range_offset, b - a, out + (a - offset));
        }
      };
}

}  // namespace tz
