// Ranks as threads in one process: the fast way to test anything that communicates (gloo's
// BaseTest::spawn). Each rank gets its own Communicator (and its own TrafficLedger) over a
// ThreadTransport; the collective algorithms are the same ones MPI runs.
//
//   tz::run_thread_world(4, [](tz::Communicator& comm) {
//     std::vector<float> x(3, float(comm.rank())), all(3 * comm.size());
//     comm.all_gather(x.data(), all.data(), 3, tz::DType::f32).wait();
//   });
//
// run_thread_world starts n threads, runs fn on each, joins them all, and rethrows the first
// exception thrown by any rank, prefixed with "rank r: " (same exception type for InputError,
// CommError and InternalError). When one rank throws, the world is aborted: ranks still waiting in
// a collective fail at once (CommError "... aborted: rank r failed") instead of waiting for their
// timeout. GoogleTest EXPECT_* failures in rank threads are recorded as usual.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/transport/transport.hpp"
#include "topology/topology.hpp"

namespace tz {

void run_thread_world(int n, const std::function<void(Communicator&)>& fn, CommOptions options = {});

// From a rank thread of run_thread_world / run_thread_mesh: aborts that world, so every wait of every
// rank fails at once with CommError("thread world aborted: <reason>"). False (and nothing happens)
// on any other thread. Tests call it when an assertion fails in a rank body (tests/support/), so a
// failure shows at once instead of as other ranks waiting for their timeout.
bool abort_thread_world_of_caller(const std::string& reason);

// Turns the thread world's transports (index = rank) into the ones the ranks run on, e.g. a simulated
// clock around each (comm/transport/sim_transport.hpp). Aborting the world still reaches them.
using TransportWrap =
    std::function<std::vector<std::unique_ptr<Transport>>(std::vector<std::unique_ptr<Transport>>)>;

// Same, with a Mesh per rank over `topology` (resolved; world size = topology.world_size()), over
// the thread transports or, with `wrap`, over what it makes of them.
void run_thread_mesh(const Topology& topology, const std::function<void(Mesh&)>& fn, CommOptions options = {},
                     const TransportWrap& wrap = {});

}  // namespace tz
