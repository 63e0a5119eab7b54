// Test harness for the shared-memory algorithms driven directly (not through a Communicator): n
// ranks as threads over one thread world, each with its own Collective and an opened SharedArena.
// A rank that throws or fails a check aborts the world (the others fail at once, not at their
// deadline) and its message is reported. With
// `delays` on, every rank's transport is wrapped in a delay transport (delay_transport.hpp). With
// `cross_memory`, the arena is opened for single-copy exchange (threads of one process can always
// read each other's memory, so the in-place paths run; without it the staged paths run).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/collective.hpp"
#include "comm/delay_injector.hpp"
#include "comm/shared_arena.hpp"
#include "comm/transport/delay_transport.hpp"
#include "comm/transport/thread_transport.hpp"
#include "core/error.hpp"

namespace tz::test {

// Whether this process may read its own memory through process_vm_readv (a container's seccomp
// profile can forbid it even so; then the arena's probe fails too and the in-place paths cannot run).
inline bool cross_memory_available() {
  std::uint64_t from = 42, to = 0;
  iovec local{&to, sizeof(to)}, remote{&from, sizeof(from)};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == sizeof(to) && to == from;
}

// Runs fn(rank, collective, arena) on n threads; the arena is opened first (over slot_bytes). A
// cross-memory run where the host forbids it is skipped, with a note.
template <typename Fn>
void on_arena(int n, std::size_t slot_bytes, double timeout_s, Fn fn, DelayInjection delays = {},
              bool cross_memory = false) {
  if (cross_memory && !cross_memory_available()) {
    std::fprintf(stderr, "note: process_vm_readv is not allowed here; the in-place paths are not run\n");
    return;
  }
  ThreadWorldHandle world = make_thread_world(n);
  if (delays.enabled())
    for (int r = 0; r < n; ++r)
      world.transports[r] =
          make_delay_transport(std::move(world.transports[r]), delays, delay_stream(r, "test"));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  const std::string group = "world";
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        Workspace ws;
        Collective c(*world.transports[r], ws, "test", group, 1, timeout_s, 1 << 20);
        auto arena = SharedArena::open(c, slot_bytes, cross_memory);
        if (arena == nullptr) throw std::runtime_error("arena did not open");
        if (arena->cross_memory() != cross_memory)
          throw std::runtime_error("cross-memory reads not as asked");
        fn(r, c, *arena);
        // A failed ASSERT returns early from fn: release the other ranks now, not at their deadline.
        if (::testing::Test::HasFailure()) world.abort(fmt::format("rank {} failed a check", r));
      } catch (const std::exception& e) {
        errors[r] = e.what();
        world.abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "n " << n << " rank " << r;
}

// A collective `op` (sequence number `seq`, 0.3 s deadline) on 3 thread ranks over arenas of 256
// bytes, where rank `absent` opens the arena and then skips the collective: fn(rank, collective,
// arena) runs on the others, and what each of them threw (a CommError at the deadline) is returned
// by rank ("" for the absent rank or one that did not throw).
inline std::vector<std::string> errors_with_an_absent_rank(
    const std::string& op, std::uint64_t seq, int absent,
    const std::function<void(int, Collective&, SharedArena&)>& fn, bool cross_memory = false) {
  std::vector<std::string> errors(3);
  ThreadWorldHandle world = make_thread_world(3);
  std::vector<std::thread> threads;
  const std::string group = "world";
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      Workspace ws;
      Collective c(*world.transports[r], ws, op, group, seq, 0.3, 1 << 20);
      auto arena = SharedArena::open(c, 256, cross_memory);
      if (r == absent) return;
      try {
        fn(r, c, *arena);
      } catch (const CommError& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace tz::test
