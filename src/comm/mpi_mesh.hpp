// Ranks as MPI processes: the counterpart of run_thread_mesh (comm/thread_world.hpp) for a job that
// mpirun or srun launched; without a launcher, a world of one that needs no MPI set-up. On every rank,
// in order: MPI_Init under the start-up deadline (comm/startup_watchdog.hpp), the world communicator
// (make_mpi_world, whose first exchange the deadline also bounds), a second world communicator of its
// own for failure reports (several ranks only, a short timeout: failing ranks exchange what they
// failed with over it), the topology resolved to the world's size and checked against the ranks'
// hostnames, the mesh, then body(mesh).
//
//   return tz::run_mpi_mesh({.topology = "frontier", .comm = comm}, [&](tz::Mesh& mesh) { ... },
//                           [&](const tz::MpiMeshFailure& f) { ...report f.error...; return code; });
//
// This is the only place outside comm/transport/ that starts MPI: the command line reaches MPI
// through it (and abort_mpi_job), never through <mpi.h>.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "comm/communicator.hpp"
#include "comm/fault_verdict.hpp"
#include "comm/mesh.hpp"

namespace tz {

struct MpiMeshOptions {
  std::string topology = "flat";         // preset name or JSON file, resolved to the world's size
  bool emulate = false;                  // allow a multi-node topology on one machine
  CommOptions comm;                      // the world's communicator options
  double startup_timeout_s = 120;        // MPI_Init and the first exchange (0 or less: no deadline)
  double failure_channel_timeout_s = 5;  // how long failing ranks wait for each other's reports
  // Sees the fault agreement's verdict (comm/fault_agreement.hpp) on this rank, under MPI.
  std::function<void(int rank, const FaultVerdict& verdict)> on_fault_verdict;
};

// What a rank knows when the start-up or the body threw.
struct MpiMeshFailure {
  std::exception_ptr error;
  int rank = 0;                     // 0 when it failed before the world existed
  int world_size = 1;               // the job's processes (1 without MPI)
  Communicator* channel = nullptr;  // the failure channel; null with one rank, or before it existed
};

// Runs body(mesh) on this rank and returns 0; when the start-up or body throws, returns what
// on_failure returns (called inside the handler, once the mesh is gone; MPI is still initialized).
int run_mpi_mesh(const MpiMeshOptions& options, const std::function<void(Mesh&)>& body,
                 const std::function<int(const MpiMeshFailure&)>& on_failure);

// Ends every process of the job with exit code `code` (MPI_Abort when MPI is active, else exit),
// printing nothing: for a rank that has already reported.
[[noreturn]] void abort_mpi_job(int code);

}  // namespace tz
