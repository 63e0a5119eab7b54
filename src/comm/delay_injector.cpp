// Seeded bounded sleeps (delay_injector.hpp).
#include "comm/delay_injector.hpp"

#include <chrono>
#include <thread>

#include "core/counter_rng.hpp"

namespace tz {

std::uint64_t delay_stream(int world_rank, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name, then mixed with the rank
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ULL;
  return splitmix64(h ^ splitmix64(static_cast<std::uint64_t>(world_rank)));
}

DelayInjector::DelayInjector(DelayInjection config, std::uint64_t stream)
    : config_(config), key_(splitmix64(config.seed) ^ stream) {}

std::uint32_t DelayInjector::next_us() {
  if (!enabled()) return 0;
  const std::uint64_t x = splitmix64(key_ ^ splitmix64(count_++));
  // Low 2 bits pick whether to sleep (1 in 4), the high bits how long.
  if ((x & 3) != 0) return 0;
  return static_cast<std::uint32_t>(1 + (x >> 2) % config_.max_us);
}

void DelayInjector::pause() {
  if (const std::uint32_t us = next_us(); us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

}  // namespace tz
