#include "cli/run_world.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "cli/exit_codes.hpp"
#include "cli/flight_dump.hpp"
#include "comm/mpi_mesh.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/mpi_world.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "train/stop_request.hpp"

namespace tz::cli {
namespace {

// How long failing ranks wait for each other before each reports alone and aborts the job.
constexpr double kFailureAgreementSeconds = 5.0;
// How long a rank other than 0 waits, before the world exists, for rank 0 to report the same error.
constexpr double kLeadReportGraceSeconds = 5.0;

int env_int(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names)
    if (const char* v = std::getenv(n)) {
      char* end = nullptr;
      const long x = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && x >= 0 && x < (1L << 30)) return static_cast<int>(x);
    }
  return fallback;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// "1,3-5,7"
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j > i + 1)
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
    else if (j == i + 1)
      out += fmt::format("{},{}", ranks[i], ranks[j]);
    else
      out += fmt::format("{}", ranks[i]);
    i = j + 1;
  }
  return out;
}

// Every failing rank calls this with its report (see run_world.hpp).
int report_failure(Communicator& channel, const ExitReport& r) {
  struct Entry {
    std::int64_t code;
    std::uint64_t hash;
  };
  const Entry mine{r.code, fnv1a(r.message)};
  std::vector<Entry> all(static_cast<std::size_t>(channel.size()));
  try {
    channel.all_gather(&mine, all.data(), sizeof(Entry), DType::u8).wait();
  } catch (...) {
    return abort_world(r.message, r.code);  // some rank is elsewhere: report alone, end the job
  }
  const int rank = channel.rank();
  std::map<std::uint64_t, std::vector<int>> by_message;
  for (int q = 0; q < channel.size(); ++q) by_message[all[q].hash].push_back(q);
  if (by_message.size() == 1) {
    if (rank == 0) print_exit_report(r);
    return r.code;
  }
  const std::vector<int>& same = by_message[mine.hash];
  if (same.front() == rank) {
    fmt::print(stderr, "tierzero: {} {}: {}\n", same.size() == 1 ? "rank" : "ranks", rank_list(same),
               r.message);
    std::fflush(stderr);
  }
  // Let the other printers finish, then end the job: ranks that failed at different points may
  // leave collectives half done, which MPI_Finalize would wait for.
  try {
    channel.barrier().wait();
  } catch (...) {
  }
  abort_mpi_job(r.code);
}

}  // namespace

int launch_rank() {
  return env_int({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0);
}

int report_before_world(const ExitReport& report) {
  const int rank = launch_rank();
  if (rank == 0) return print_exit_report(report);
  std::this_thread::sleep_for(std::chrono::duration<double>(kLeadReportGraceSeconds));
  return print_exit_report(
      {.code = report.code, .message = fmt::format("rank {}: {}", rank, report.message)});
}

int slurm_step_tasks_on_node(const char* tasks_per_node, const char* node_id) {
  if (tasks_per_node == nullptr || node_id == nullptr) return 0;
  char* end = nullptr;
  const long node = std::strtol(node_id, &end, 10);
  if (end == node_id || *end != '\0' || node < 0) return 0;
  long first = 0;  // the index of the entry's first node
  for (const char* p = tasks_per_node; *p != '\0';) {
    const long tasks = std::strtol(p, &end, 10);
    if (end == p || tasks < 1 || tasks >= (1L << 30)) return 0;
    long repeat = 1;
    p = end;
    if (*p == '(') {  // "(xM)": the same count on M nodes
      if (p[1] != 'x') return 0;
      repeat = std::strtol(p + 2, &end, 10);
      if (end == p + 2 || *end != ')' || repeat < 1) return 0;
      p = end + 1;
    }
    if (node < first + repeat) return static_cast<int>(tasks);
    first += repeat;
    if (*p == ',')
      ++p;
    else if (*p != '\0')
      return 0;
  }
  return 0;
}

int launch_local_size() {
  const int launcher = env_int({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 0);
  if (launcher > 0) return launcher;
  const int slurm =
      slurm_step_tasks_on_node(std::getenv("SLURM_STEP_TASKS_PER_NODE"), std::getenv("SLURM_NODEID"));
  return slurm > 0 ? slurm : 1;
}

namespace {

// body(mesh) with the rank's flight recorder registered (for signals) and written when the rank
// fails communicating (a timeout, an abort after the fault agreement): bad input writes nothing.
void run_recorded(const WorldOptions& o, Mesh& mesh, const std::function<void(Mesh&)>& body) {
  if (o.flight_recorder.empty() || o.flight_recorder == "off") return body(mesh);
  const std::shared_ptr<FlightRecorder>& rec = mesh.world().recorder();
  const std::string path = flight_record_path(o.flight_recorder, rec->world_rank());
  register_flight_recorder(rec, path);
  try {
    body(mesh);
  } catch (const CommError& e) {
    unregister_flight_recorder(rec.get());
    dump_flight_recorder(*rec, path, fmt::format("communication error: {}", e.what()));
    throw;
  } catch (...) {
    unregister_flight_recorder(rec.get());
    throw;
  }
  unregister_flight_recorder(rec.get());
}

}  // namespace

int run_on_world(const WorldOptions& o, const std::function<void(Mesh&)>& body) {
  CommOptions comm;
  comm.device = o.device;
  comm.timeout_s = o.timeout_s;
  comm.shared_memory_all_gather = comm.shared_memory_all_to_all = comm.shared_memory_broadcast =
      comm.shared_memory_reduce_scatter = o.shared_memory;
  comm.shared_slot_bytes = o.shared_slot_bytes;
  comm.shared_memory_single_copy = o.shared_single_copy;
  comm.shared_all_to_all = o.shared_all_to_all;
  comm.check_collectives = o.check_collectives;
  install_flight_signals();
  if (o.threads > 0) {
    try {
      run_thread_mesh(
          Topology::load(o.topology).resolve(o.threads), [&](Mesh& mesh) { run_recorded(o, mesh, body); },
          comm);
      return 0;
    } catch (...) {
      return print_exit_report(report_current_exception());
    }
  }
  return run_mpi_mesh(
      {.topology = o.topology,
       .emulate = o.emulate,
       .comm = comm,
       .startup_timeout_s = o.startup_timeout_s,
       .failure_channel_timeout_s = kFailureAgreementSeconds,
       .on_fault_verdict =
           [](int rank, const FaultVerdict& v) {
             fmt::print(stderr, "tierzero: rank {}: agreed fault report: {}\n", rank, v.line);
             std::fflush(stderr);
           }},
      [&](Mesh& mesh) {
        run_recorded(o, mesh, body);
        check_standard_output();  // a report that did not reach its file is an error, on the rank that wrote
                                  // it
      },
      [](const MpiMeshFailure& f) {
        try {
          std::rethrow_exception(f.error);
        } catch (const StopRequested& e) {
          // Every rank stopped at the same step boundary, with nothing in flight: a clean end, no abort.
          if (f.rank == 0) fmt::print(stderr, "tierzero: {}\n", e.what());
          std::fflush(stdout);
          return kExitStopRequested;
        } catch (...) {
          const ExitReport r = report_current_exception();
          if (f.channel) return report_failure(*f.channel, r);
          if (f.world_size > 1) return abort_world(r.message, r.code);  // failed before the channel existed
          return print_exit_report(r);
        }
      });
}

}  // namespace tz::cli
