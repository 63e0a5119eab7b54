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
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh.hpp"
#include "comm/transport.hpp"
#include "topology/topology.hpp"

namespace tz {

void run_thread_world(int n, const std::function<void(Communicator&)>& fn, CommOptions options = {});

// Same, with a Mesh per rank over `topology` (resolved; world size = topology.world_size()).
void run_thread_mesh(const Topology& topology, const std::function<void(Mesh&)>& fn,
                     CommOptions options = {});

// The raw transports of an n-rank thread world (index = rank), for building other communicators or
// transports on top (e.g. a simulated clock). Usable from n threads, one per transport.
std::vector<std::unique_ptr<Transport>> make_thread_transports(int n);

}  // namespace tz
