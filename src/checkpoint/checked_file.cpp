#include "checkpoint/checked_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/output_file.hpp"

namespace tz {
namespace {

[[noreturn]] void fail_sys(const std::string& what, const std::string& path) {
  fail_input("checkpoint: cannot {} {}: {}", what, path, std::strerror(errno));
}

}  // namespace

OutFile::OutFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_sys("create", path_);
}

OutFile::~OutFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutFile::write(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_sys("write", path_);
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
    written_ += static_cast<std::uint64_t>(n);
  }
}

void OutFile::sync_and_close() {
  if (::fsync(fd_) != 0) fail_sys("fsync", path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_sys("close", path_);
}

InFile::InFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail_sys("open", path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail_sys("stat", path_);
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InFile::~InFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InFile::read_at(std::uint64_t offset, void* out, std::size_t bytes) const {
  auto* p = static_cast<char*>(out);
  std::uint64_t at = offset;
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_sys("read", path_);
    }
    if (n == 0)
      fail_input("checkpoint: {} is truncated: needs bytes [{}, {}), the file has {} bytes", path_, offset,
                 at + bytes, size_);
    p += n;
    at += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_sys("open directory", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail_sys("fsync directory", dir);
}

void rename_path(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) fail_sys("rename " + from + " to", to);
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) fail_input("checkpoint: cannot remove {}: {}", path, ec.message());
}

void write_file_atomic(const std::string& path, const std::string& text) {
  OutputFile f(path, "checkpoint:");  // a temporary beside it, fsync, rename, fsync of the folder
  f.write(text);
  f.close();
}

std::string read_small_file(const std::string& path) {
  InFile f(path);
  std::string s(f.size(), '\0');
  if (!s.empty()) f.read_at(0, s.data(), s.size());
  return s;
}

}  // namespace tz
