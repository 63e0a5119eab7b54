// A file tierzero writes (metrics lines, reports, tables, model and parameter files, vocabularies, token
// shards): every write, flush and the close are checked, and a failure is an InputError naming the
// file, what it is and the system's reason ("--metrics /dev/full: writing 212 bytes failed: No space
// left on device"). Writes are buffered by stdio, so a full disk may surface only at flush() or
// close(): a caller that must not lose a line (a metrics file, one line per step) flushes after it.
//
// Where the bytes go depends on what the path is, never silently:
//   - a regular file, or nothing yet: OutputMode::replace writes a temporary beside it
//     (PATH.tmp.PID), fsyncs it and renames it over PATH at close(), then fsyncs the folder, so a
//     reader sees the old file or the whole new one; an abandoned or failed write removes the
//     temporary. OutputMode::in_place writes PATH itself as it goes (a log read while it grows).
//     A symbolic link is followed: the file it names is replaced, the link stays.
//   - a character or block device, a FIFO or a socket (/dev/null, /dev/stdout, a pipe): written in
//     place in both modes, as `cat > PATH` would; never replaced by a regular file.
//   - a directory: an InputError saying so.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace tz {

enum class OutputMode {
  replace,   // all or nothing: a temporary renamed over the path at close()
  in_place,  // written where it is as it goes (a log, a metrics file)
};

class OutputFile {
 public:
  // Opens `path` for writing (truncating it in place, or a temporary beside it). `what` names the
  // file for the user in messages: an option ("--metrics"), or a role ("parameter file"). InputError
  // when it cannot be opened or is a directory.
  OutputFile(std::string path, std::string what, OutputMode mode = OutputMode::replace);
  // Without a successful close(): closes without checking (an error is already on its way) and
  // removes the temporary of a replacing write (the path keeps its old content, or stays absent).
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  void write(const void* data, std::size_t bytes);
  void flush();
  // Moves the write position to `offset` bytes from the start (a header written last). Not on a
  // device or FIFO written in place.
  void seek(long offset);
  // Flushes and closes; for a replacing write, fsyncs and renames the temporary over the path. A
  // failure of any of these is an InputError, and the temporary is removed. Once only.
  void close();

  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }
  std::size_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void fail(std::string_view action, int error_number);
  void remove_temporary();

  std::string path_, what_;
  std::string target_;     // the file the bytes end up in (the path, or the file a link names)
  std::string temporary_;  // a replacing write's temporary; empty when written in place
  std::FILE* f_ = nullptr;
  bool regular_ = true;  // false: a device, FIFO or socket written in place (no fsync, no seek)
  std::size_t written_ = 0;
};

// Writes `text` to `path` in one go (replacing it as a whole), checked as above.
void write_output_file(const std::string& path, std::string_view text, const std::string& what);

// Standard output, which `--format json` documents and reports go to: flushes it and throws an
// InputError when it or any earlier write to it failed (a redirect to a full disk).
void check_standard_output();

}  // namespace tz
