// A file tierzero writes (metrics lines, reports, tables, parameter files, vocabularies): every write,
// flush and the close are checked, and a failure is an InputError naming the file, what it is and the
// system's reason ("--metrics /dev/full: writing 212 bytes failed: No space left on device"). Writes
// are buffered by stdio, so a full disk may surface only at flush() or close(): a caller that must
// not lose a line (a metrics file, one line per step) flushes after it.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace tz {

class OutputFile {
 public:
  // Opens `path` for writing (truncating it). `what` names the file for the user in messages: an
  // option ("--metrics"), or a role ("parameter file"). InputError when it cannot be opened.
  OutputFile(std::string path, std::string what);
  // Closes without checking when close() was not called (an error is already on its way).
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  void write(const void* data, std::size_t bytes);
  void flush();
  // Moves the write position to `offset` bytes from the start (a header written last).
  void seek(long offset);
  // Flushes and closes; a failure of either is an InputError. Once only.
  void close();

  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(std::string_view action, int error_number);

  std::string path_, what_;
  std::FILE* f_ = nullptr;
};

// Writes `text` to `path` in one go, checked as above.
void write_output_file(const std::string& path, std::string_view text, const std::string& what);

// Standard output, which `--format json` documents and reports go to: flushes it and throws an
// InputError when it or any earlier write to it failed (a redirect to a full disk).
void check_standard_output();

}  // namespace tz
