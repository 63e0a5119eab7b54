// The save directory of a run, made ready before the first step and held while the run lives:
//   - rank 0 creates it (and its parents) and refuses what cannot hold checkpoints: a path that is a
//     file, a device or anything but a directory, a folder it cannot create or write in;
//   - rank 0 takes an exclusive lock on DIR/LOCK (flock, released by the kernel when the process
//     ends, however it ends) and writes its host and pid into the file, so that a second run saving
//     into the same directory at the same time fails at its start with the holder named, instead
//     of both runs writing step_N over each other;
//   - every other rank checks that it sees the directory (all ranks save into one shared folder).
// Done as agreed I/O (agreed_io.hpp): the same InputError on every rank. So a bad --save-dir costs
// seconds, not the run that would have been saved. The LOCK file stays after the run (removing it
// would race with a run that opened it); only the lock counts, never the file's presence.
#pragma once

#include <string>

#include "comm/communicator.hpp"

namespace tz {

inline constexpr const char* kSaveDirLockFile = "LOCK";

class SaveDirLock {
 public:
  // Collective over `world`. InputError (on every rank) naming the directory and why, or the holder
  // ("host h, pid p") of the lock.
  SaveDirLock(Communicator& world, const std::string& dir, double io_timeout_s);
  ~SaveDirLock();  // releases the lock (rank 0)
  SaveDirLock(const SaveDirLock&) = delete;
  SaveDirLock& operator=(const SaveDirLock&) = delete;

 private:
  int fd_ = -1;  // rank 0's open LOCK file
};

}  // namespace tz
