// Test harness for the shared-memory algorithms driven directly (not through a Communicator): n
// ranks as threads over one thread world, each with its own Collective and an opened SharedArena.
// A rank that throws or fails a check aborts the world (the others fail at once, not at their
// deadline) and its message is reported. With
// `delays` on, every rank's transport is wrapped in a delay transport (delay_transport.hpp).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "comm/collective.hpp"
#include "comm/delay_injector.hpp"
#include "comm/shared_arena.hpp"
#include "comm/transport/delay_transport.hpp"
#include "comm/transport/thread_transport.hpp"

namespace tz::test {

// Runs fn(rank, collective, arena) on n threads; the arena is opened first (over slot_bytes).
template <typename Fn>
void on_arena(int n, std::size_t slot_bytes, double timeout_s, Fn fn, DelayInjection delays = {}) {
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
        auto arena = SharedArena::open(c, slot_bytes);
        if (arena == nullptr) throw std::runtime_error("arena did not open");
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

}  // namespace tz::test
