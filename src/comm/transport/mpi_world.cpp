// MPI start-up, the world communicator, host checks and job abort (mpi_world.hpp).
#include "comm/transport/mpi_world.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/shared_arena.hpp"
#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_fault_channel.hpp"
#include "comm/transport/mpi_transport.hpp"
#include "comm/transport/thread_transport.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

// The fault agreement of this process and its channel (make_mpi_world); the channel's listener is
// stopped before MPI_Finalize.
struct MpiFaults {
  std::shared_ptr<FaultAgreement> agreement;
  std::unique_ptr<MpiFaultChannel> channel;
};
MpiFaults g_faults;

// This job's flight-recorder run id: drawn by world rank 0 and broadcast by the first make_mpi_world
// (before anything is recorded, so every rank's file carries it), kept for the later ones.
std::string g_run_id;

std::string agreed_run_id(int rank) {
  if (!g_run_id.empty()) return g_run_id;
  std::array<char, 17> id{};
  if (rank == 0) {
    const std::string mine = new_flight_run_id();
    std::strncpy(id.data(), mine.c_str(), id.size() - 1);
  }
  // The start-up watchdog bounds this first exchange, as it bounds MPI_Init (comm/startup_watchdog.hpp).
  TZ_MPI_CHECK(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_CHAR, 0, MPI_COMM_WORLD));
  id.back() = '\0';
  g_run_id = id.data();
  return g_run_id;
}

}  // namespace

bool launched_by_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

bool mpi_active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!launched_by_mpi_launcher()) return;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &level_);
    if (rc != MPI_SUCCESS) throw CommError(fmt::format("MPI_Init_thread failed with code {}", rc));
    owns_ = true;
  } else {
    TZ_MPI_CHECK(MPI_Query_thread(&level_));
  }
  active_ = true;
  TZ_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (level_ < MPI_THREAD_SERIALIZED)
    throw CommError(
        fmt::format("MPI granted thread level {} but tierzero needs at least MPI_THREAD_SERIALIZED", level_));
  if (level_ < MPI_THREAD_MULTIPLE) {
    set_mpi_serialized(true);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      fmt::print(stderr,
                 "tierzero: MPI granted MPI_THREAD_SERIALIZED, not MPI_THREAD_MULTIPLE: every MPI call is "
                 "serialized by one lock (slower communication)\n");
  }
}

MpiSession::~MpiSession() {
  g_faults.channel.reset();
  if (owns_ && mpi_active()) MPI_Finalize();
}

namespace {

// The ranks of MPI_COMM_WORLD that share this process's host memory (collective over the world).
int ranks_sharing_memory(int rank) {
  MPI_Comm host;
  TZ_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host));
  int n = 1;
  TZ_MPI_CHECK(MPI_Comm_size(host, &n));
  TZ_MPI_CHECK(MPI_Comm_free(&host));
  return n;
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world(CommOptions options) {
  sweep_stale_shared_segments_once();  // what killed jobs on this host left in /dev/shm
  if (!mpi_active())
    return make_communicator(std::move(make_thread_world(1).transports[0]), "world", options);
  int rank = 0, size = 1;
  TZ_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TZ_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (options.ranks_on_host == 0) options.ranks_on_host = ranks_sharing_memory(rank);
  auto recorder =
      std::make_shared<FlightRecorder>(rank, size, agreed_run_id(rank), options.flight_recorder_entries);
  MpiFaultChannel* channel = nullptr;
  if (size > 1 && !g_faults.channel) {
    g_faults.agreement = std::make_shared<FaultAgreement>(recorder, options.fault_agreement_timeout_s);
    g_faults.agreement->install_timeout_hook();
    g_faults.agreement->add_on_verdict(
        [](const FaultVerdict& v) { abort_mpi_transports("the live ranks agreed on the fault: " + v.line); });
    g_faults.channel = std::make_unique<MpiFaultChannel>(g_faults.agreement);
    channel = g_faults.channel.get();
  }
  MPI_Comm dup;
  TZ_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  auto world = make_communicator(make_mpi_transport(dup), "world", options, nullptr, recorder);
  if (channel) {
    // Every rank's host and pid, so the listener can watch the processes of its host's peers.
    struct Process {
      std::int64_t pid;
      std::array<char, 120> host;
    };
    Process mine{static_cast<std::int64_t>(getpid()), {}};
    if (gethostname(mine.host.data(), mine.host.size() - 1) != 0) mine.host[0] = '?';
    std::vector<Process> all(size);
    world->all_gather(&mine, all.data(), sizeof(Process), DType::u8).wait();
    std::vector<PeerProcess> peers;
    for (const Process& p : all) peers.push_back({std::string(p.host.data()), static_cast<long>(p.pid)});
    channel->set_peers(std::move(peers));
  }
  return world;
}

std::shared_ptr<FaultAgreement> mpi_fault_agreement() {
  return g_faults.agreement;
}

std::vector<std::string> gather_hostnames(Communicator& world) {
  constexpr std::size_t kLen = 256;
  std::array<char, kLen> mine{};
  if (gethostname(mine.data(), kLen - 1) != 0) std::strncpy(mine.data(), "?", kLen - 1);
  std::vector<char> all(kLen * world.size());
  world.all_gather(mine.data(), all.data(), kLen, DType::u8).wait();
  std::vector<std::string> out;
  for (int r = 0; r < world.size(); ++r) out.emplace_back(all.data() + r * kLen);
  return out;
}

void check_hosts(const Topology& topology, Communicator& world, bool emulate) {
  topology.check_hosts(gather_hostnames(world), emulate);
}

int abort_world(const std::string& message, int code) {
  int rank = 0, size = 1;
  if (mpi_active()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  fmt::print(stderr, "tierzero: rank {}: {}\n", rank, message);
  std::fflush(stderr);
  if (size > 1) {
    // Peers that fail at about the same time (a timeout seen by several ranks) get to print their
    // own reports, which name other missing ranks, before the job is torn down.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}

}  // namespace tz
