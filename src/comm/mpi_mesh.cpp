// Ranks as MPI processes (mpi_mesh.hpp). Built into the MPI backend's library with the transport
// (comm/transport/mpi_*.cpp).
#include "comm/mpi_mesh.hpp"

#include <mpi.h>

#include <cstdlib>
#include <memory>

#include "comm/startup_watchdog.hpp"
#include "comm/transport/mpi_world.hpp"
#include "topology/topology.hpp"

namespace tz {

int run_mpi_mesh(const MpiMeshOptions& o, const std::function<void(Mesh&)>& body,
                 const std::function<int(const MpiMeshFailure&)>& on_failure) {
  StartupWatchdog watchdog(o.startup_timeout_s);
  MpiSession session;
  std::unique_ptr<Communicator> channel;  // failure reports only
  int rank = 0;
  try {
    std::unique_ptr<Communicator> world = make_mpi_world(o.comm);
    watchdog.done();
    rank = world->rank();
    if (std::shared_ptr<FaultAgreement> agreement = mpi_fault_agreement(); agreement && o.on_fault_verdict)
      agreement->add_on_verdict([rank, hook = o.on_fault_verdict](const FaultVerdict& v) { hook(rank, v); });
    if (world->size() > 1) {
      CommOptions quick;
      quick.timeout_s = o.failure_channel_timeout_s;
      quick.shared_memory_all_gather = quick.shared_memory_all_to_all = quick.shared_memory_broadcast =
          quick.shared_memory_reduce_scatter = false;  // the channel only exchanges a few bytes
      channel = make_mpi_world(quick);
    }
    const Topology topo = Topology::load(o.topology).resolve(world->size());
    check_hosts(topo, *world, o.emulate);
    Mesh mesh(topo, std::move(world));
    body(mesh);
    return 0;
  } catch (...) {
    int size = 1;
    if (mpi_active()) MPI_Comm_size(MPI_COMM_WORLD, &size);
    return on_failure(
        {.error = std::current_exception(), .rank = rank, .world_size = size, .channel = channel.get()});
  }
}

void abort_mpi_job(int code) {
  if (mpi_active()) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace tz
