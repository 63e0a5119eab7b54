// A file mapped read-only into memory (mmap, MAP_PRIVATE, PROT_READ). Nothing is read when the file
// is opened: the kernel reads a page the first time a token on it is used, and may drop it again
// under memory pressure (clean file pages), so a shard of any size costs only the pages a run
// touches. The file descriptor is closed right after mapping; the mapping lives as long as the object.
// Readahead is switched off (MADV_RANDOM): training windows are read in a shuffled order, a few KiB
// each, so reading ahead would fetch pages no window asks for.
#pragma once

#include <cstddef>
#include <string>

namespace tz {

class MappedFile {
 public:
  // InputError naming the path (prefixed by `what`, e.g. "data") when the file is missing, a
  // directory, unreadable or empty.
  MappedFile(const std::string& path, const std::string& what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size_bytes() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tz
