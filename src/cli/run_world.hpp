// The one way a communicating command (train, bench comm, bench qcomm) starts and ends on every rank:
// the world (comm/mpi_mesh.hpp: MPI when mpirun/srun launched the process, else a world of one; or
// comm/thread_world.hpp: `threads` ranks as threads in this process), the topology laid over it and
// checked against the ranks' real hostnames,
// the command's body on every rank, and what it throws turned into one line and an exit code
// (cli/exit_codes.hpp). What rank 0 printed to the standard output is checked to have arrived (exit
// code 2 when it did not). A stop that every rank agreed on (StopRequested, after SIGINT or SIGTERM)
// ends every rank cleanly with exit code 5.
//
// A failure is reported once. The ranks that fail exchange what they failed with over a channel of
// their own (a second world communicator, made at start-up, with a deadline of a few seconds):
//   - every rank failed with the same message (a bad config every rank read, a run that diverged,
//     agreed by a collective): rank 0 prints it once and every rank exits with its code;
//   - ranks failed differently: each distinct message is printed once, by the lowest rank that has it,
//     naming the ranks ("tierzero: ranks 1,3: ..."), then the job is aborted;
//   - some rank did not arrive within the deadline (it is still inside a collective, or it died):
//     each failing rank prints its own message with its rank and aborts the job (MPI_Abort), so no
//     rank is left waiting.
//
// When a rank fails communicating, its flight recorder is written first (one file per rank under
// `flight_recorder`), and under MPI the verdict of the fault agreement (comm/fault_agreement.hpp) is
// printed by every live rank, as the same line.
#pragma once

#include <functional>
#include <string>

#include "cli/exit_codes.hpp"

#include "comm/mesh.hpp"

namespace tz::cli {

struct WorldOptions {
  std::string topology = "flat";        // preset name or JSON file, resolved to the world's size
  DeviceKind device = DeviceKind::cpu;  // where the collectives' buffers live (CommOptions::device)
  bool emulate = false;                 // allow a multi-node topology on one machine
  double timeout_s = 300;               // a collective not done by then fails with a report
  int threads = 0;                      // > 0: that many ranks as threads in this process, no MPI
  bool shared_memory = true;            // false: no shared-memory collectives (the transport's algorithms)
  std::size_t shared_slot_bytes = CommOptions{}.shared_slot_bytes;  // per-rank staging buffer
  bool shared_single_copy = true;  // false: the shared collectives always stage (no in-place reads)
  SharedAllToAll shared_all_to_all = SharedAllToAll::automatic;  // CommOptions::shared_all_to_all
  // Faults (docs/faults.md): agree on every collective's signature first; the start-up deadline
  // (MPI_Init and the first exchange); the flight-recorder directory ("" or "off": none).
  bool check_collectives = false;
  double startup_timeout_s = 120;
  std::string flight_recorder = "tierzero-flight";
};

// Runs body(mesh) on every rank; returns the process exit code.
int run_on_world(const WorldOptions& options, const std::function<void(Mesh&)>& body);

// This process's rank as its launcher tells it (Open MPI, PMI, PMIx, Slurm), 0 without a launcher.
// Known before MPI starts: messages that depend only on the command line are printed by rank 0.
int launch_rank();
// Reports an error that every rank meets before the world exists (the same command line, the same
// files) and returns its exit code. Rank 0 prints it at once. Another rank first waits a short
// grace period: the launcher ends the job as soon as one rank fails, so a rank that fails first
// and exits at once would cut rank 0 off before its line is printed. A rank still alive after
// the grace period (rank 0 did not fail: its inputs differ) prints the error with its rank.
int report_before_world(const ExitReport& report);
// Ranks on this host as the launcher tells it (1 without one): Open MPI's mpirun, MPICH's, else
// Slurm's srun (its step's tasks on this node: slurm_step_tasks_on_node).
int launch_local_size();
// Slurm's count of a step's tasks on one node: `tasks_per_node` as srun sets
// SLURM_STEP_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of the step's first 3 nodes, then 1) at
// `node_id` (SLURM_NODEID, the node's index in the step); 0 when either is missing or unreadable.
int slurm_step_tasks_on_node(const char* tasks_per_node, const char* node_id);

}  // namespace tz::cli
