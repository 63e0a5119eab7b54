#include "checkpoint/save_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/agreed_io.hpp"
#include "core/error.hpp"

namespace tz {
namespace fs = std::filesystem;
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "an unknown host";
  return name;
}

// What the holder wrote into the lock file ("host h, pid p"), for the message.
std::string lock_holder(int fd) {
  char text[512] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string s(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "a process that has not written its name yet" : s;
}

// Rank 0: the directory made (or found) and locked; returns the open lock file.
int create_and_lock(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail_input("save directory {}: exists and is not a directory (checkpoints are step_N folders inside it)",
               dir);
  fs::create_directories(dir, ec);
  if (ec) fail_input("save directory {}: cannot create the directory: {}", dir, ec.message());
  const std::string path = (fs::path(dir) / kSaveDirLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    fail_input("save directory {}: cannot create {} in it: {} (the directory must be writable)", dir, path,
               std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? lock_holder(fd) : "";
    ::close(fd);
    if (err == EWOULDBLOCK)
      fail_input(
          "save directory {}: another run saves into it now ({}; lock file {}): give each run its own "
          "directory",
          dir, holder, path);
    fail_input("save directory {}: cannot lock {}: {}", dir, path, std::strerror(err));
  }
  const std::string me = fmt::format("host {}, pid {}\n", host_name(), static_cast<long>(::getpid()));
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    const int err = errno;
    ::close(fd);
    fail_input("save directory {}: cannot write {}: {}", dir, path, std::strerror(err));
  }
  return fd;
}

}  // namespace

SaveDirLock::SaveDirLock(Communicator& world, const std::string& dir, double io_timeout_s) {
  auto agreed = [&](const char* what, const std::function<void()>& task) {
    run_agreed_io(
        world, {.what = fmt::format("{} the save directory {}", what, dir), .timeout_s = io_timeout_s}, task);
  };
  try {
    agreed("preparing", [&] {
      if (world.rank() == 0) fd_ = create_and_lock(dir);
    });
    agreed("checking", [&] {
      std::error_code ec;
      if (!fs::is_directory(dir, ec))
        fail_input(
            "save directory {}: rank 0 made it, but this rank does not see it: every rank must save to the "
            "same "
            "shared directory",
            dir);
    });
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    throw;
  }
}

SaveDirLock::~SaveDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tz
