// A Transport that wraps another (threads, MPI) and sleeps a seeded, bounded random time before
// every isend and irecv and at every inject_delay() call (the shared-memory collectives' publications),
// so that races between ranks and between the streams of one rank get other interleavings than
// the natural ones (CommOptions::delay_injection). make_communicator wraps its transport in one when
// delay injection is on; split() returns a wrapped sub-group with its own stream of sleeps.
#pragma once

#include <memory>

#include "comm/comm_options.hpp"
#include "comm/transport/transport.hpp"

namespace tz {

// `stream` keys the sleeps (delay_stream(world rank, communicator label) for a communicator).
std::unique_ptr<Transport> make_delay_transport(std::unique_ptr<Transport> inner, DelayInjection config,
                                                std::uint64_t stream);

// The sleeps drawn so far by a transport made by make_delay_transport; -1 for any other transport.
long long delay_transport_draws(const Transport& transport);

}  // namespace tz
