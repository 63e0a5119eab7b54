// The MPI transport: one MPI communicator (duplicated or split, so tierzero's traffic never mixes
// with anyone else's), non-blocking MPI_Isend / MPI_Irecv of bytes, and waits that poll MPI_Testsome
// against a deadline with a backoff (yield while messages are moving, then short sleeps), so
// oversubscribed ranks leave the CPU to their peers instead of spinning.
//
// Threads: every Communicator has its own progress thread, so MPI must be initialized with
// MPI_THREAD_MULTIPLE (MpiSession asks for it). Where the library grants only MPI_THREAD_SERIALIZED,
// every MPI call of every transport is serialized by one process-wide mutex (slower, correct), and
// MpiSession says so once on stderr. Every MPI call is checked (TZ_MPI_CHECK).
#pragma once

#include <mpi.h>

#include <memory>
#include <mutex>
#include <string>

#include "comm/transport/transport.hpp"

namespace tz {

// Takes ownership of `comm` (freed on destruction); its error handler is set to MPI_ERRORS_RETURN.
std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm);

// Whether MPI calls must be serialized process-wide (the granted thread level is below MULTIPLE).
void set_mpi_serialized(bool serialized);
// The process-wide MPI lock when calls are serialized (an empty lock otherwise), for MPI users
// beside the transports (the fault channel).
std::unique_lock<std::mutex> mpi_call_lock();

// Ends every wait of every MPI transport of this process, now and later, with
// CommError("aborted: <reason>") (after the fault agreement's verdict: the job is going down).
void abort_mpi_transports(const std::string& reason);

}  // namespace tz
