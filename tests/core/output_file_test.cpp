// Output files (core/output_file.hpp): a regular file is replaced whole or not at all, with nothing
// left beside it when a write fails or is abandoned; a device, FIFO or socket is written in place and
// stays what it was (as root, a rename over /dev/null would put a regular file there); a directory is
// refused; a link is followed. Device nodes are made with mknod in a scratch folder (root only: the
// cases skip, saying why, elsewhere), a full disk is /dev/full's node.
#include "core/output_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "support/expect_input_error.hpp"
#include "support/scratch_dir.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// The names in `dir`, sorted.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A character device node like /dev/null (1, 3) or /dev/full (1, 7) at `path`; false where this
// process may not make one (not root, or a container without the capability).
bool make_char_device(const std::string& path, unsigned minor) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

TEST(OutputFile, ReplacesARegularFileWholeAndKeepsItsPermissions) {
  test::ScratchDir dir;
  const std::string p = dir.write("model.bin", "old content");
  ::chmod(p.c_str(), 0600);
  {
    OutputFile f(p, "--out");
    f.write("new");
    EXPECT_EQ(read_all(p), "old content");  // a reader sees the old file until close()
    f.write(" bytes");
    f.close();
    EXPECT_EQ(f.bytes_written(), 9u);
  }
  EXPECT_EQ(read_all(p), "new bytes");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(names_in(dir.path("")), std::vector<std::string>{"model.bin"});
}

TEST(OutputFile, AnAbandonedWriteLeavesTheOldFileAndNoTemporary) {
  test::ScratchDir dir;
  const std::string p = dir.write("model.bin", "old");
  {
    OutputFile f(p, "--out");
    f.write("half a model");
  }  // an exception unwinding through the writer
  EXPECT_EQ(read_all(p), "old");
  EXPECT_EQ(names_in(dir.path("")), std::vector<std::string>{"model.bin"});
  {
    OutputFile f(dir.path("new.bin"), "--out");
    f.write("x");
  }
  EXPECT_EQ(names_in(dir.path("")), std::vector<std::string>{"model.bin"});  // nothing made
}

TEST(OutputFile, InPlaceWritesAsItGoes) {
  test::ScratchDir dir;
  const std::string p = dir.path("metrics.jsonl");
  OutputFile f(p, "--metrics", OutputMode::in_place);
  f.write("{\"step\": 0}\n");
  f.flush();
  EXPECT_EQ(read_all(p), "{\"step\": 0}\n");  // readable while the run goes on
  f.close();
}

TEST(OutputFile, ADirectoryIsRefusedAndLeftAlone) {
  test::ScratchDir dir;
  fs::create_directories(dir.path("out"));
  expect_input_error([&] { OutputFile f(dir.path("out"), "--out"); },
                     {"--out", dir.path("out"), "is a directory"});
  expect_input_error([&] { write_output_file(dir.path("out"), "x", "plot output"); }, {"is a directory"});
  EXPECT_EQ(names_in(dir.path("")), std::vector<std::string>{"out"});
  EXPECT_TRUE(fs::is_empty(dir.path("out")));
  expect_input_error([&] { OutputFile f(dir.path("missing/x.bin"), "--out"); },
                     {"--out", dir.path("missing/x.bin"), "cannot create", "No such file"});
}

TEST(OutputFile, ALinkIsFollowedAndStaysALink) {
  test::ScratchDir dir;
  const std::string target = dir.write("real.bin", "old");
  fs::create_symlink(target, dir.path("link.bin"));
  write_output_file(dir.path("link.bin"), "new", "--out");
  EXPECT_TRUE(fs::is_symlink(dir.path("link.bin")));
  EXPECT_EQ(read_all(target), "new");
  EXPECT_EQ(names_in(dir.path("")), (std::vector<std::string>{"link.bin", "real.bin"}));
}

TEST(OutputFile, ACharacterDeviceIsWrittenInPlaceNeverReplaced) {
  test::ScratchDir dir;
  const std::string null = dir.path("null"), full = dir.path("full");
  if (!make_char_device(null, 3) || !make_char_device(full, 7))
    GTEST_SKIP() << "cannot make device nodes here (needs root): " << std::strerror(errno);
  for (OutputMode mode : {OutputMode::replace, OutputMode::in_place}) {
    OutputFile f(null, "--out", mode);
    f.write(std::string(1 << 20, 'x'));
    f.close();
    EXPECT_TRUE(fs::is_character_file(null));
  }
  // /dev/full: every write fails with ENOSPC; the error names it, and it stays a device.
  expect_input_error(
      [&] {
        OutputFile f(full, "--out");
        f.write(std::string(1 << 16, 'x'));
        f.close();
      },
      {"--out", full, "No space left on device"});
  EXPECT_TRUE(fs::is_character_file(full));
  EXPECT_EQ(names_in(dir.path("")), (std::vector<std::string>{"full", "null"}));
}

TEST(OutputFile, AFifoIsWrittenInPlace) {
  test::ScratchDir dir;
  const std::string fifo = dir.path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::string got;
  std::thread reader([&] { got = read_all(fifo); });
  {
    OutputFile f(fifo, "--out");
    f.write("through the pipe");
    expect_input_error([&] { f.seek(0); }, {"--out", fifo, "not a regular file", "cannot seek"});
    f.close();
  }
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(names_in(dir.path("")), std::vector<std::string>{"pipe"});
}

}  // namespace
}  // namespace tz
