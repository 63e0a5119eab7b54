// Sleeps of delay injection (CommOptions::delay_injection, comm_options.hpp). A DelayInjector draws
// a bounded random sleep per call from a counter-based generator keyed by (seed, stream): the n-th
// call of a stream always sleeps the same time, whatever the timing around it. The delay transport
// (transport/delay_transport.hpp) holds one per communicator; other code that wants its own phases
// shuffled (an engine between the phases of a step) makes its own:
//
//   tz::DelayInjector phases(options.delay_injection, tz::delay_stream(world_rank, "engine"));
//   ...
//   phases.pause();  // before each phase; a no-op when delay injection is off
//
// One injector belongs to one thread (its counter is not synchronized).
#pragma once

#include <cstdint>
#include <string_view>

#include "comm/comm_options.hpp"

namespace tz {

// The stream key of `name` on `world_rank`: distinct per rank and per name.
std::uint64_t delay_stream(int world_rank, std::string_view name);

class DelayInjector {
 public:
  DelayInjector() = default;  // off
  DelayInjector(DelayInjection config, std::uint64_t stream);

  bool enabled() const { return config_.enabled(); }
  // The next sleep of this stream in microseconds: 0 for three calls in four, else uniform in
  // [1, max_us] (always 0 when off). Mostly-unpaused calls with a few long pauses let one rank run
  // far ahead of another that pauses, the interleavings where a missing wait shows.
  std::uint32_t next_us();
  // Sleeps next_us() microseconds.
  void pause();
  // How many sleeps were drawn so far (tests check that a path really injects).
  std::uint64_t draws() const { return count_; }

 private:
  DelayInjection config_;
  std::uint64_t key_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace tz
