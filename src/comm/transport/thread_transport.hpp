// Ranks as threads in one process: a Transport whose messages are memcpy'd from the sender's buffer
// into the receiver's (one copy, done by whichever side arrives second, outside the lock). Sends are
// rendezvous: a send completes when its data has been copied out. All transports of one world share
// a ThreadWorld that matches messages by (context, source, destination, tag) in posting order;
// split() allocates a fresh context so sub-groups never see each other's messages.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/transport/transport.hpp"

namespace tz {

class ThreadWorld;

// The world-rank transports of a new n-rank thread world, and a way to abort it: every pending and
// future wait on it, and every later isend or irecv, throws CommError("... aborted: <reason>"), so
// nothing is copied into or out of a buffer after the abort.
struct ThreadWorldHandle {
  std::shared_ptr<ThreadWorld> world;
  std::vector<std::unique_ptr<Transport>> transports;
  void abort(const std::string& reason) const;
};
ThreadWorldHandle make_thread_world(int n);

}  // namespace tz
