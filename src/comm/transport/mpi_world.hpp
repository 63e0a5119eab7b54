// Starting tierzero on real processes (comm/mpi_mesh.cpp does this for every command):
//
//   tz::MpiSession session;                             // MPI_Init_thread(MULTIPLE) ... MPI_Finalize
//   auto world = tz::make_mpi_world(options);           // the world Communicator, label "world"
//   tz::check_hosts(topology, *world, emulate);         // node tier vs real hostnames
//   ... on any exception: return tz::abort_world(message, code);
//
// Without a launcher (no mpirun/srun environment) MPI is not initialized at all: the world is one
// rank over the thread transport, so a plain `tierzero ...` needs no MPI set-up. Under a launcher,
// errors from MPI calls are returned (MPI_ERRORS_RETURN) and become CommErrors, never silent aborts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/fault_agreement.hpp"
#include "topology/topology.hpp"

namespace tz {

class MpiSession {
 public:
  // argc/argv may be null. Initializes MPI when a launcher started this process (and MPI is not
  // initialized yet); finalizes it on destruction if it initialized it.
  MpiSession(int* argc = nullptr, char*** argv = nullptr);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool active() const { return active_; }  // MPI is initialized and usable

 private:
  bool active_ = false;
  bool owns_ = false;
  int level_ = 0;
};

// True when the environment says a launcher (mpirun, srun, hydra) started this process.
bool launched_by_mpi_launcher();
// Whether MPI is initialized (and not finalized) in this process.
bool mpi_active();

// The world communicator: over a duplicate of MPI_COMM_WORLD when MPI is active, else one rank.
// First removes shared-memory segments that dead tierzero processes left (shared_arena.hpp).
// With several MPI ranks it also starts the fault agreement (comm/fault_agreement.hpp) over its own
// side channel (comm/transport/mpi_fault_channel.hpp): a timeout or a lost peer makes the live ranks
// agree on the culprit, and the verdict ends every wait of this process (abort_mpi_transports).
// Collective over the world: the first call takes the flight recorders' run id from world rank 0
// (comm/flight_recorder.hpp), and it exchanges every rank's host and pid, with the options' timeout.
std::unique_ptr<Communicator> make_mpi_world(CommOptions options = {});

// The agreement make_mpi_world started (null before, or for a world of one): the CLI adds a hook
// that prints the verdict.
std::shared_ptr<FaultAgreement> mpi_fault_agreement();

// Every rank's hostname, by world rank (a collective over `world`).
std::vector<std::string> gather_hostnames(Communicator& world);
// Topology::check_hosts against the real hostnames (a collective; the same InputError on all ranks).
void check_hosts(const Topology& topology, Communicator& world, bool emulate);

// After an exception: prints "tierzero: rank r: <message>" to stderr and, when several MPI
// processes run, waits 0.5 s (so peers failing at the same time print their reports too) and calls
// MPI_Abort(MPI_COMM_WORLD, code), so no rank hangs waiting for this one. Returns
// `code` (for the caller to return from main) only when there is nothing to abort.
int abort_world(const std::string& message, int code);

}  // namespace tz
