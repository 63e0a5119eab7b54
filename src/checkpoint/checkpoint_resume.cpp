#include "checkpoint/checkpoint_resume.hpp"

#include <fmt/format.h>

#include <chrono>

#include "checkpoint/agreed_io.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/crc32c.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"

namespace tz {

ResumeResult resume_checkpoint(Communicator& world, ShardedEngine& engine, const std::string& path,
                               const ResumeOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ResumeResult res;
  AgreedIoOptions io{.what = fmt::format("checkpoint load of {}", path), .timeout_s = options.io_timeout_s};
  CompletionMarker marker;
  run_agreed_io(world, io, [&] {
    const ResolvedCheckpoint rc = resolve_checkpoint(path);
    res.path = rc.path;
    res.note = rc.note;
    marker = *read_marker(rc.path);
  });
  // Every rank must have found the same checkpoint.
  const std::int64_t key[2] = {marker.step, marker.manifest_crc32c};
  std::vector<std::int64_t> keys(2 * static_cast<std::size_t>(world.size()));
  world.all_gather(key, keys.data(), sizeof key, DType::u8).wait();
  for (int r = 0; r < world.size(); ++r)
    if (keys[2 * r] != keys[0] || keys[2 * r + 1] != keys[1])
      fail_input(
          "checkpoint: ranks found different checkpoints in {}: rank 0 step {} (manifest {}), rank {} step "
          "{} "
          "(manifest {}): every rank must read the same shared directory",
          path, keys[0], crc32c_hex(static_cast<std::uint32_t>(keys[1])), r, keys[2 * r],
          crc32c_hex(static_cast<std::uint32_t>(keys[2 * r + 1])));

  run_agreed_io(world, io, [&] {
    CheckpointReader reader(res.path);
    const CheckpointManifest& m = reader.manifest();
    m.check_against(engine.params(), "checkpoint " + res.path);
    engine.restore(m.step, m.skipped_steps, reader.state_reader(engine.params()));
    res.step = m.step;
    res.skipped_steps = m.skipped_steps;
    res.world_size = m.world_size;
    res.data = m.data;
    res.train_config = m.train_config;
    res.topology = m.topology;
    res.plan = m.plan;
    res.bytes_read = reader.bytes_read();
  });
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace tz
