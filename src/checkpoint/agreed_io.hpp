// Checkpoint I/O that every rank of a communicator runs and agrees on, with its own timeout (longer
// than the collectives': writing a shard can take minutes where a collective takes milliseconds).
//
// Steps. Each rank runs its task (its part of a save or load; possibly nothing) on a worker thread,
// while its calling thread takes part in rounds of one small all-gather (a 4-byte status per rank:
// working, done, failed, timed out). A rank contributes to the next round as soon as its task ends,
// or after a short interval (5% of the time so far, 1 to 250 ms) while it still works; so every
// collective completes within that interval, far inside the communicator's timeout, however long the
// I/O takes. Rounds stop when every rank is done or failed, or when some rank's task passed the I/O
// timeout. All ranks see the same statuses, so they leave in the same round, and the same
// collectives are issued in the same order everywhere. On a failure the ranks then all-gather a
// 1 KiB message each, and every rank throws the same error: the lowest failing rank's message
// (prefixed "rank r: "), with its exception type (InputError, TrainingError, InternalError), or a
// CommError naming the ranks that did not finish in time. Bytes moved: 4 x world per round.
//
// A task that passes the timeout is abandoned (its thread detached, still blocked in the kernel):
// the caller must stop, which the CommError makes it do.
#pragma once

#include <functional>
#include <string>

#include "comm/communicator.hpp"

namespace tz {

struct AgreedIoOptions {
  std::string what = "checkpoint I/O";  // names the operation in messages ("checkpoint save step_5")
  double timeout_s = 1800;              // a rank's task running longer than this fails the operation
};

// Runs `task` on every rank (collective over `comm`); returns on every rank when every task returned,
// else throws the same error on every rank.
void run_agreed_io(Communicator& comm, const AgreedIoOptions& options, const std::function<void()>& task);

}  // namespace tz
