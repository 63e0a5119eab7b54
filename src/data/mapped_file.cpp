#include "data/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tz {

MappedFile::MappedFile(const std::string& path, const std::string& what) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) fail_input("{} {}: no such file", what, path);
    fail_input("{} {}: cannot open: {}", what, path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail_input("{} {}: cannot stat: {}", what, path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail_input("{} {}: is a directory, expected a file (a glob such as '{}/*.bin' names its shards)", what,
               path, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_input("{} {}: not a regular file", what, path);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    fail_input("{} {}: file is empty", what, path);
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) fail_input("{} {}: cannot map {} bytes: {}", what, path, size_, std::strerror(err));
  ::madvise(p, size_, MADV_RANDOM);  // a hint only: its failure changes nothing but speed
  data_ = static_cast<const unsigned char*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace tz
