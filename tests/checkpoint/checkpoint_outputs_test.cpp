// What checkpoint saves and exports leave on disk when the place they write to is wrong or fills up:
// the save directory is made, checked and locked before the first step (a file, a device or an
// uncreatable path is refused on every rank; a second run saving into a locked directory is told who
// holds it); a failed save (a full disk) leaves no step_N.tmp or unmarked step_N; an export never
// replaces a device or FIFO, refuses a directory, and leaves no temporary after a failure (a corrupt
// checkpoint, a full disk); `latest` follows one rule whatever it holds. A full disk is a tmpfs of a
// few KiB mounted for the test (root only: those cases skip, saying why, elsewhere).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "checkpoint/checked_file.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/save_dir_lock.hpp"
#include "checkpoint/weight_export.hpp"
#include "checkpoint_test_util.hpp"
#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "support/expect_contains.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_contains;
using test::TrialSpec;

// Every name under `dir` (recursively), relative to it, sorted.
std::vector<std::string> tree(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// A tmpfs of `bytes` mounted on a fresh folder while the object lives; mounted() is false where this
// process may not mount (not root).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& name, std::size_t bytes) : dir_(test::scratch_dir(name)) {
    const std::string opts = fmt::format("size={}", bytes);
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0;
    error_ = mounted_ ? "" : std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, error_;
  bool mounted_ = false;
};

// Runs SaveDirLock on `ranks` thread ranks; returns each rank's error (empty: it succeeded), holding
// the locks until `hold` returns.
std::vector<std::string> lock_errors(int ranks, const std::string& dir,
                                     const std::function<void()>& hold = {}) {
  std::vector<std::string> errors(ranks);
  std::mutex mu;
  run_thread_world(ranks, [&](Communicator& world) {
    try {
      SaveDirLock lock(world, dir, 30);
      world.barrier();
      if (hold && world.rank() == 0) hold();
      world.barrier();
    } catch (const InputError& e) {
      std::lock_guard g(mu);
      errors[world.rank()] = e.what();
    }
  });
  return errors;
}

std::string common(const std::vector<std::string>& errors) {
  for (const auto& e : errors) EXPECT_EQ(e, errors[0]);
  EXPECT_NE(errors[0], "");
  return errors[0];
}

TEST(SaveDir, IsMadeBeforeTheRunAndWhatCannotHoldCheckpointsIsRefusedOnEveryRank) {
  const std::string root = test::scratch_dir("dirs");
  EXPECT_EQ(lock_errors(3, root + "/a/b/c"), std::vector<std::string>(3));
  EXPECT_TRUE(fs::is_directory(root + "/a/b/c"));
  EXPECT_TRUE(fs::exists(root + "/a/b/c/LOCK"));

  std::ofstream(root + "/file") << "x";
  expect_contains(common(lock_errors(3, root + "/file")),
                  {"save directory " + root + "/file", "exists and is not a directory"});
  expect_contains(common(lock_errors(2, "/dev/null")), {"save directory /dev/null", "not a directory"});
  expect_contains(common(lock_errors(2, "/proc/self/x")), {"save directory /proc/self/x", "cannot create"});
  expect_contains(common(lock_errors(2, root + "/file/sub")), {"save directory " + root + "/file/sub"});
}

TEST(SaveDir, ASecondRunSavingIntoALockedDirectoryIsToldWhoHoldsIt) {
  const std::string dir = test::scratch_dir("locked");
  std::vector<std::string> second;
  const std::vector<std::string> first = lock_errors(2, dir, [&] { second = lock_errors(3, dir); });
  EXPECT_EQ(first, std::vector<std::string>(2));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  expect_contains(common(second), {"save directory " + dir, "another run saves into it now",
                                   fmt::format("host {}, pid {}", host, ::getpid()), dir + "/LOCK"});
  // Released with the run: the next one takes it.
  EXPECT_EQ(lock_errors(1, dir), std::vector<std::string>(1));
}

TEST(SaveDir, AFullDiskLeavesNoTemporaryOrUnmarkedCheckpoint) {
  SmallTmpfs disk("full_save", 16 << 10);  // the tiny model's checkpoint is about 300 KiB
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << disk.error();
  TrialSpec s;
  s.topo = test::topology_for_world(2);
  s.steps = 2;
  s.save_dir = disk.dir() + "/run";
  const std::string error = test::common_error(test::run_trial(s), "a save to a full disk");
  expect_contains(error, {"step_2.tmp", "No space left on device"});
  EXPECT_EQ(tree(s.save_dir), std::vector<std::string>{});
}

// A checkpoint of the tiny model to export.
std::string saved_checkpoint(const std::string& name) {
  TrialSpec s;
  s.topo = test::topology_for_world(2);
  s.steps = 1;
  s.save_dir = test::scratch_dir(name);
  test::expect_no_errors(test::run_trial(s), "the save");
  return s.save_dir + "/step_1";
}

std::string export_error(const std::string& ckpt, const std::string& out) {
  try {
    export_checkpoint(ckpt, out, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Export, ADeviceOrFifoIsWrittenInPlaceAndADirectoryIsRefused) {
  const std::string ckpt = saved_checkpoint("ckpt_dev");
  const std::string dir = test::scratch_dir("out_dev");
  // A directory: refused, nothing made beside it.
  fs::create_directories(dir + "/model.safetensors");
  expect_contains(export_error(ckpt, dir + "/model.safetensors"), {"--out", "is a directory"});
  EXPECT_EQ(tree(dir), std::vector<std::string>{"model.safetensors"});
  // A FIFO: the model streams through it.
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::size_t bytes = 0;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    bytes = std::string(std::istreambuf_iterator<char>(in), {}).size();
  });
  const ExportResult r = export_checkpoint(ckpt, fifo, {});
  reader.join();
  EXPECT_EQ(bytes, r.bytes);
  EXPECT_TRUE(fs::is_fifo(fifo));
  // Character devices (made here as /dev/null and /dev/full are): never replaced by a file.
  if (::mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod((dir + "/full").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot make device nodes here (needs root): " << std::strerror(errno);
  EXPECT_EQ(export_error(ckpt, dir + "/null"), "");
  EXPECT_TRUE(fs::is_character_file(dir + "/null"));
  expect_contains(export_error(ckpt, dir + "/full"), {"--out " + dir + "/full", "No space left on device"});
  EXPECT_TRUE(fs::is_character_file(dir + "/full"));
  EXPECT_EQ(tree(dir), (std::vector<std::string>{"full", "model.safetensors", "null", "pipe"}));
}

TEST(Export, AFailedExportLeavesNothingBehind) {
  const std::string ckpt = saved_checkpoint("ckpt_fail");
  const std::string dir = test::scratch_dir("out_fail");
  // A corrupt checkpoint, found while the file is being written: no file, no temporary.
  {
    std::fstream f(ckpt + "/rank_00001.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  }
  expect_contains(export_error(ckpt, dir + "/model.safetensors"), {"crc32c"});
  EXPECT_EQ(tree(dir), std::vector<std::string>{});
  // A full disk.
  SmallTmpfs disk("full_export", 8 << 10);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << disk.error();
  const std::string good = saved_checkpoint("ckpt_full");
  expect_contains(export_error(good, disk.dir() + "/model.bin"), {"No space left on device"});
  EXPECT_EQ(tree(disk.dir()), std::vector<std::string>{});
}

TEST(Latest, OneRuleForWhatItHolds) {
  TrialSpec s;
  s.topo = test::topology_for_world(1);
  s.steps = 2;
  s.save_every = 1;
  s.save_dir = test::scratch_dir("latest_rule");
  test::expect_no_errors(test::run_trial(s), "save");
  const std::string latest = s.save_dir + "/latest";
  // Whatever `latest` holds that is not a complete checkpoint, the newest complete one is taken and
  // the note says why; an empty file is no exception.
  const std::pair<std::string, std::string> cases[] = {
      {"", "names '', not a step_N directory"},
      {"garbage", "names 'garbage', not a step_N directory"},
      {"step_9\n", "step_9, which is not a complete checkpoint"}};
  for (const auto& [text, note] : cases) {
    std::ofstream(latest, std::ios::trunc) << text;
    const ResolvedCheckpoint r = resolve_checkpoint(s.save_dir);
    EXPECT_EQ(fs::path(r.path).filename(), "step_2") << text;
    expect_contains(r.note, {note, "using the newest complete checkpoint"});
  }
  fs::remove(latest);
  expect_contains(resolve_checkpoint(s.save_dir).note, {"has no 'latest' file"});
  fs::create_directory(latest);  // unreadable as a file
  EXPECT_EQ(fs::path(resolve_checkpoint(s.save_dir).path).filename(), "step_2");
}

}  // namespace
}  // namespace tz
