// The file operations of checkpoints, every one checked: a failed open, write, read, fsync, rename
// or close is an InputError naming the file and the system's reason (never a silent short write).
// Writes go through the page cache and are made durable by fsync (the file, then its directory, so
// the name survives a crash too); reads are positioned (pread), so a rank reads only the byte ranges
// it needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tz {

class OutFile {
 public:
  // Creates or truncates `path`.
  explicit OutFile(std::string path);
  ~OutFile();
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void write(const void* data, std::size_t bytes);
  std::uint64_t bytes_written() const { return written_; }
  // fsync, then close; the destructor only closes (a file not synced is not complete).
  void sync_and_close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
};

class InFile {
 public:
  explicit InFile(std::string path);
  ~InFile();
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  std::uint64_t size() const { return size_; }
  // Reads exactly `bytes` at `offset`; InputError naming the file if it ends first.
  void read_at(std::uint64_t offset, void* out, std::size_t bytes) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// fsync of a directory: makes the names created, renamed or removed in it durable.
void sync_directory(const std::string& dir);
// rename(2), atomic on one file system.
void rename_path(const std::string& from, const std::string& to);
// Removes a file or a directory tree; absent is fine.
void remove_tree(const std::string& path);
// Writes `text` to `path` atomically: a temporary beside it, fsync, rename, fsync of the directory.
void write_file_atomic(const std::string& path, const std::string& text);
// The whole content of a small file.
std::string read_small_file(const std::string& path);

}  // namespace tz
