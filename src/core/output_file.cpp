#include "core/output_file.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tz {

OutputFile::OutputFile(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  f_ = std::fopen(path_.c_str(), "wb");
  if (f_ == nullptr) fail("cannot open for writing", errno);
}

OutputFile::~OutputFile() {
  if (f_ != nullptr) std::fclose(f_);
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
}

void OutputFile::flush() {
  TZ_CHECK(f_ != nullptr, "flush after close of {}", path_);
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail("writing failed", errno);
}

void OutputFile::seek(long offset) {
  TZ_CHECK(f_ != nullptr, "seek after close of {}", path_);
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
  if (std::fclose(f) != 0) fail("closing failed", errno);
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
