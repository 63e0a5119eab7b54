// The options of a communicator (CommOptions) and of its delay injection, as one plain struct filled
// once (by the CLI, a test or the engine) and checked once (validate_comm_options, called by
// make_communicator). Every communicator split from another keeps its options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "comm/flight_recorder.hpp"
#include "device/backend.hpp"

namespace tz {

// Delay injection: before every send and receive, and at every publication and wait of a
// shared-memory collective, the transport may sleep: one time in four, for a time uniform in
// [1, max_us] microseconds, drawn from a counter-based generator keyed by (seed, world rank,
// communicator), so the same seed gives every rank the same sequence of sleeps on each
// communicator. Results of every collective are unchanged; only the interleaving of ranks and
// streams changes, so that ordering bugs (a buffer reused before a peer read it, a stream that does
// not wait for another) show up as wrong values in tests. max_us = 0 turns it off (the default).
// For sleeps at other points (an engine's step phases) see comm/delay_injector.hpp.
struct DelayInjection {
  std::uint64_t seed = 0;
  std::uint32_t max_us = 0;
  bool enabled() const { return max_us > 0; }
  bool operator==(const DelayInjection&) const = default;
};
inline constexpr std::uint32_t kMaxInjectedDelayUs = 100000;  // 0.1 s: larger only slows tests down

// "SEED:MAX_US" (e.g. "7:2000"), or "off". InputError naming `option` and the text otherwise.
DelayInjection parse_delay_injection(std::string_view text, std::string_view option = "delay injection");

// The shared-memory all-to-all: staged through a ring per (source, destination) pair
// (all_to_all_pair_rings.cpp: a slow pair holds up only its own two ranks), staged in rounds that
// each wait for the whole group (all_to_all_shared.cpp), or in place (each block copied once, by the
// kernel, straight from the sender's buffer: exchange_in_place.cpp; staged in rounds where the host
// does not allow it or shared_memory_single_copy is off). `automatic`: pair rings while every rank of
// the host has a core of its own, rounds once they outnumber its cores (then a rank runs only when
// the scheduler lets it, and a wake-up per chunk costs more than a wait per round). Measured on 2
// cores (docs/algorithms.md), staging beat the in-place copy at 2-8 ranks, pair rings at 2, rounds at 4
// and 8.
enum class SharedAllToAll : std::uint8_t { automatic, pair_rings, rounds, in_place };
std::string_view shared_all_to_all_name(SharedAllToAll a);  // "auto", "pair-rings", "rounds", "in-place"
// The inverse; InputError naming `option` and the text otherwise.
SharedAllToAll parse_shared_all_to_all(std::string_view text, std::string_view option = "shared all-to-all");

struct CommOptions {
  // Where the buffers handed to collectives live (device/backend.hpp). The transports are not
  // device-aware: for a backend whose memory the host cannot address, each collective copies its
  // input into host staging memory first and its output back last, with the backend's copies.
  DeviceKind device = DeviceKind::cpu;
  double timeout_s = 300;  // a collective not done by then fails with a CommError report
  // Every collective first agrees on (op, dtype, count, root, group, sequence number) with a small
  // all-gather; a difference fails it on every rank with one report naming the first rank that
  // differs from group rank 0, both values, and every rank's signature (`--check-collectives`).
  bool check_collectives = false;
  // After a timeout the live ranks exchange views to agree on the culprit (comm/fault_agreement.hpp);
  // the exchange waits this long for ranks that do not answer.
  double fault_agreement_timeout_s = 3;
  // Entries kept per communicator by the flight recorder (comm/flight_recorder.hpp).
  std::size_t flight_recorder_entries = FlightRecorder::kDefaultCapacity;
  // Large messages are cut into chunks of this many bytes so that receiving, reducing and forwarding
  // overlap (pipelining). Tests set it small to force the multi-chunk paths with little data.
  std::size_t chunk_bytes = std::size_t{1} << 20;
  // Collectives among ranks that share a host run the direct shared-memory algorithms
  // (all_gather_shared.cpp, all_to_all_shared.cpp, broadcast_shared.cpp, reduce_scatter_shared.cpp)
  // instead of the ring, pairwise exchange and tree over the transport: every block is copied once
  // into a shared staging buffer and once out, instead of once per step. Each is switchable;
  // the all-reduce runs as the shared reduce-scatter then the shared all-gather when both are on.
  // `shared_slot_bytes` is the staging buffer per rank (two of them, double-buffered), so a group of p ranks
  // maps 2*p*shared_slot_bytes, once, shared by all four. 1 MiB: every round of a collective waits for the
  // group, so with more ranks than cores fewer, larger rounds win (at 4 and 8 ranks on 2 cores, 1 MiB against
  // 256 KiB gave 1.1-1.5x the reduce-scatter's and 1.0-1.35x the all-to-all's busbw at 4-64 MiB).
  bool shared_memory_all_gather = true;
  bool shared_memory_all_to_all = true;
  bool shared_memory_broadcast = true;
  bool shared_memory_reduce_scatter = true;
  // Where the host lets the ranks read each other's memory (process_vm_readv: the same user, no
  // ptrace restriction; probed once per group, all ranks agree), the all-gather of two ranks (and the
  // all-to-all, where shared_all_to_all asks for in_place) copy every block once, straight from the
  // sender's buffer into the receiver's (exchange_in_place.cpp), instead of in and out of staging.
  // Off: always staged.
  bool shared_memory_single_copy = true;
  // Which shared-memory all-to-all runs (when shared_memory_all_to_all is on).
  SharedAllToAll shared_all_to_all = SharedAllToAll::automatic;
  std::size_t shared_slot_bytes = std::size_t{1} << 20;
  // Ranks this host runs in all, processes or threads, of every group (0: not known, a group then
  // counts only its own ranks). A shared-memory wait polls long only while the host has a core per
  // rank: two ranks of a group may have two cores between them while six more ranks of the host
  // want the same cores. make_mpi_world fills it from MPI (the ranks sharing this host's memory),
  // a thread world with its own size.
  int ranks_on_host = 0;
  DelayInjection delay_injection;
};

// Range checks: timeout_s finite in (0, 1e9], chunk_bytes >= 1, shared_slot_bytes in [1, 1 GiB],
// ranks_on_host in [0, 1 << 20], delay_injection.max_us <= kMaxInjectedDelayUs. InputError naming the field
// and its value.
void validate_comm_options(const CommOptions& options);

}  // namespace tz
