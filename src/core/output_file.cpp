#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace tz {
namespace {

// fsync of the folder holding `file`, so that a rename into it survives a crash.
int sync_parent_folder(const std::string& file) {
  const std::filesystem::path p(file);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string what, OutputMode mode)
    : path_(std::move(path)), what_(std::move(what)), target_(path_) {
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail_input("{} {}: is a directory; expected a file name", what_, path_);
  regular_ = !exists || S_ISREG(st.st_mode);
  struct stat link {};
  const bool is_link = ::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  // A dangling link is written through (fopen creates the file it names), never replaced.
  const bool replace = mode == OutputMode::replace && regular_ && (exists || !is_link);
  if (replace) {
    if (is_link) {  // replace the file the link names, not the link
      char resolved[PATH_MAX];
      if (::realpath(path_.c_str(), resolved) == nullptr) fail("cannot resolve the link", errno);
      target_ = resolved;
    }
    temporary_ = target_ + ".tmp." + std::to_string(static_cast<long>(::getpid()));
    f_ = std::fopen(temporary_.c_str(), "wb");
    if (f_ == nullptr) {
      const int err = errno;
      temporary_.clear();  // nothing was created
      fail("cannot create a file beside it", err);
    }
    if (exists) ::fchmod(::fileno(f_), st.st_mode & 07777);  // the replaced file's permissions
  } else {
    f_ = std::fopen(path_.c_str(), "wb");
    if (f_ == nullptr) fail("cannot open for writing", errno);
  }
}

OutputFile::~OutputFile() {
  if (f_ != nullptr) std::fclose(f_);
  remove_temporary();
}

void OutputFile::remove_temporary() {
  if (temporary_.empty()) return;
  ::unlink(temporary_.c_str());  // best effort: an error is already being reported
  temporary_.clear();
}

void OutputFile::fail(std::string_view action, int error_number) {
  fail_input("{} {}: {}: {}", what_, path_, action,
             error_number != 0 ? std::strerror(error_number) : "an I/O error");
}

void OutputFile::write(std::string_view text) {
  write(text.data(), text.size());
}

void OutputFile::write(const void* data, std::size_t bytes) {
  TZ_CHECK(f_ != nullptr, "write after close of {}", path_);
  errno = 0;
  if (bytes > 0 && std::fwrite(data, 1, bytes, f_) != bytes)
    fail(fmt::format("writing {} bytes failed", bytes), errno);
  written_ += bytes;
}

void OutputFile::flush() {
  TZ_CHECK(f_ != nullptr, "flush after close of {}", path_);
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail("writing failed", errno);
}

void OutputFile::seek(long offset) {
  TZ_CHECK(f_ != nullptr, "seek after close of {}", path_);
  if (!regular_)
    fail_input("{} {}: not a regular file (a device or FIFO): cannot seek back to byte {}", what_, path_,
               offset);
  if (std::fseek(f_, offset, SEEK_SET) != 0) fail(fmt::format("seek to byte {} failed", offset), errno);
}

void OutputFile::close() {
  TZ_CHECK(f_ != nullptr, "close twice of {}", path_);
  std::FILE* f = f_;
  f_ = nullptr;
  errno = 0;
  if (std::fflush(f) != 0 || std::ferror(f)) {
    const int err = errno;
    std::fclose(f);
    fail("writing failed", err);
  }
  if (!temporary_.empty() && ::fsync(::fileno(f)) != 0) {
    const int err = errno;
    std::fclose(f);
    fail("fsync failed", err);
  }
  if (std::fclose(f) != 0) fail("closing failed", errno);
  if (temporary_.empty()) return;
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0)
    fail(fmt::format("renaming {} over it failed", temporary_), errno);
  temporary_.clear();  // it is the file now
  if (const int err = sync_parent_folder(target_); err != 0) fail("fsync of its folder failed", err);
}

void write_output_file(const std::string& path, std::string_view text, const std::string& what) {
  OutputFile f(path, what);
  f.write(text);
  f.close();
}

void check_standard_output() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::clearerr(stdout);  // reported once
    fail_input("writing the standard output failed: {}", err != 0 ? std::strerror(err) : "a write error");
  }
}

}  // namespace tz
