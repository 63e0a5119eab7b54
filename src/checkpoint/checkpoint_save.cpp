#include "checkpoint/checkpoint_save.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <filesystem>

#include "checkpoint/agreed_io.hpp"
#include "checkpoint/checked_file.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_manifest.hpp"
#include "checkpoint/checkpoint_pieces.hpp"
#include "checkpoint/crc32c.hpp"
#include "core/error.hpp"
#include "core/finite_scan.hpp"
#include "core/timing.hpp"

namespace tz {
namespace fs = std::filesystem;
namespace {

void maybe_kill(const SaveOptions& o, const char* point, int rank, int step) {
  if (o.kill_point == point && o.kill_rank == rank && (o.kill_step < 0 || o.kill_step == step))
    std::raise(SIGKILL);
}

// Rank 0's clean-up of a save that failed on any rank (every rank leaves each agreed phase with the
// same error, so no rank still writes into it): the temporary directory, and the step directory when
// the failure came after its rename but before its completion marker. Best effort, never throws (an
// error is already on its way); a crash instead leaves them to the next save's rotation.
class UnfinishedSave {
 public:
  UnfinishedSave(bool owner, std::string tmp, std::string final_dir)
      : owner_(owner), tmp_(std::move(tmp)), final_dir_(std::move(final_dir)) {}
  ~UnfinishedSave() {
    if (!owner_ || finished_) return;
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    bool complete = false;
    try {
      complete = read_marker(final_dir_).has_value();
    } catch (const std::exception&) {  // an unreadable marker: not a checkpoint
    }
    if (!complete) fs::remove_all(final_dir_, ec);
  }
  UnfinishedSave(const UnfinishedSave&) = delete;
  UnfinishedSave& operator=(const UnfinishedSave&) = delete;
  void finished() { finished_ = true; }

 private:
  bool owner_, finished_ = false;
  std::string tmp_, final_dir_;
};

}  // namespace

void check_kill_point(const std::string& point, const std::string& option) {
  if (point != "write" && point != "manifest" && point != "rename" && point != "marker")
    fail_input("{}: '{}' is not a save point (write, manifest, rename, marker)", option, point);
}

SaveResult save_checkpoint(Communicator& world, const ShardedEngine& engine, const CheckpointMeta& meta,
                           const SaveOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = world.rank(), size = world.size();
  const int step = engine.steps_done();
  const ShardLayout& layout = engine.layout();
  const ParameterLayout& params = engine.params();
  TZ_CHECK_EQ(layout.world_size(), size);
  const std::string name = step_dir_name(step);
  const std::string tmp = (fs::path(options.dir) / (name + ".tmp")).string();
  const std::string final_dir = (fs::path(options.dir) / name).string();
  AgreedIoOptions io{.what = fmt::format("checkpoint save of {}", final_dir),
                     .timeout_s = options.io_timeout_s};
  UnfinishedSave unfinished(rank == 0, tmp, final_dir);

  run_agreed_io(world, io, [&] {
    if (rank != 0) return;
    std::error_code ec;
    fs::create_directories(options.dir, ec);
    if (ec) fail_input("checkpoint: cannot create the save directory {}: {}", options.dir, ec.message());
    remove_tree(tmp);
    if (!fs::create_directory(tmp, ec) || ec)
      fail_input("checkpoint: cannot create {}: {}", tmp, ec ? ec.message() : "it exists");
    sync_directory(options.dir);
  });

  const RankPieces mine = pieces_written_by(layout, params, rank, kCheckpointBlockBytes);
  std::vector<std::uint32_t> crcs(mine.blocks);
  run_agreed_io(world, io, [&] {
    std::error_code ec;
    if (!fs::is_directory(tmp, ec))
      fail_input(
          "checkpoint: {} (made by rank 0) is not visible here: every rank must save to the same shared "
          "directory",
          tmp);
    OutFile out((fs::path(tmp) / rank_file_name(rank)).string());
    std::vector<float> piece;
    for (std::size_t k = 0; k < mine.pieces.size(); ++k) {
      if (k == mine.pieces.size() / 2) maybe_kill(options, "write", rank, step);
      const PlannedPiece& p = mine.pieces[k];
      const ShardSpan o = engine.optim_span(p.range);
      piece.resize(p.numel);  // the piece's values, copied from the engine's device memory
      engine.read_optim_values(p.which, p.range, p.range_offset - o.offset, p.numel, piece.data());
      const float* src = piece.data();
      if (std::size_t bad = first_nonfinite(src, p.numel); bad < p.numel)
        throw TrainingError(fmt::format(
            "checkpoint {} not saved: tensor '{}' ({}) element {} is {}: a diverged state is never saved",
            final_dir, params.tensors()[p.tensor].name, optim_value_name(p.which), p.begin + bad, src[bad]));
      const std::uint64_t bytes = p.numel * sizeof(float);
      for (std::uint64_t b = 0, i = p.first_block; b < bytes; b += kCheckpointBlockBytes, ++i)
        crcs[i] = crc32c(0, reinterpret_cast<const std::byte*>(src) + b,
                         std::min(kCheckpointBlockBytes, bytes - b));
      out.write(src, bytes);
    }
    if (mine.pieces.size() < 2) maybe_kill(options, "write", rank, step);
    TZ_CHECK_EQ(out.bytes_written(), mine.bytes);
    out.sync_and_close();
  });

  // Every rank's checksums (rank 0 writes them into the manifest).
  std::vector<RankPieces> all;
  std::uint64_t max_blocks = 0, total_bytes = 0;
  for (int r = 0; r < size; ++r) {
    all.push_back(r == rank ? mine : pieces_written_by(layout, params, r, kCheckpointBlockBytes));
    max_blocks = std::max(max_blocks, all.back().blocks);
    total_bytes += all.back().bytes;
  }
  std::vector<std::uint32_t> send(max_blocks, 0), recv(max_blocks * static_cast<std::size_t>(size));
  std::copy(crcs.begin(), crcs.end(), send.begin());
  if (max_blocks > 0) world.all_gather(send.data(), recv.data(), max_blocks * 4, DType::u8).wait();

  std::vector<std::string> removed;
  run_agreed_io(world, io, [&] {
    if (rank != 0) return;
    CheckpointManifest m;
    m.step = step;
    m.skipped_steps = engine.skipped_steps();
    m.model = params.config();
    m.train_config = meta.train_config;
    m.topology = meta.topology;
    m.plan = meta.plan;
    m.world_size = size;
    m.data = meta.data;
    m.schedule = meta.schedule;
    m.init_seed = meta.init_seed;
    for (const auto& pt : params.tensors())
      m.tensors.push_back({pt.name, std::vector<std::uint64_t>(pt.shape.begin(), pt.shape.end()), {}});
    for (int r = 0; r < size; ++r) {
      const std::string file = rank_file_name(r);
      m.files[file] = all[r].bytes;
      for (const auto& p : all[r].pieces) {
        CheckpointPiece cp{file, p.byte_offset, p.begin, p.numel, {}};
        const std::uint64_t blocks =
            (p.numel * sizeof(float) + kCheckpointBlockBytes - 1) / kCheckpointBlockBytes;
        const std::uint32_t* c = recv.data() + static_cast<std::size_t>(r) * max_blocks + p.first_block;
        cp.block_crc32c.assign(c, c + blocks);
        m.tensors[p.tensor].pieces[static_cast<int>(p.which)].push_back(std::move(cp));
      }
    }
    const std::string text = m.to_json().dump(1) + "\n";
    {
      OutFile f((fs::path(tmp) / kManifestFile).string());
      f.write(text.data(), text.size());
      f.sync_and_close();
    }
    sync_directory(tmp);
    maybe_kill(options, "manifest", rank, step);
    std::error_code ec;
    if (fs::exists(final_dir, ec)) {  // an older save of this step (a run resumed from before it)
      remove_tree((fs::path(final_dir) / kCompleteFile).string());
      sync_directory(final_dir);
      remove_tree(final_dir);
    }
    rename_path(tmp, final_dir);
    sync_directory(options.dir);
    maybe_kill(options, "rename", rank, step);
    write_file_atomic((fs::path(final_dir) / kCompleteFile).string(),
                      marker_text({step, text.size(), crc32c(0, text.data(), text.size())}));
    maybe_kill(options, "marker", rank, step);
    write_file_atomic((fs::path(options.dir) / kLatestFile).string(), name + "\n");
    removed = rotate_checkpoints(options.dir, step, options.keep);
  });
  unfinished.finished();

  SaveResult res;
  res.path = final_dir;
  res.step = step;
  res.bytes = total_bytes;
  res.rank_bytes = mine.bytes;
  res.removed = std::move(removed);
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace tz
