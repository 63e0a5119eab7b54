// run_thread_world / run_thread_mesh (thread_world.hpp): n ranks as threads over a ThreadWorld.
#include "comm/thread_world.hpp"

#include <fmt/format.h>

#include <mutex>
#include <thread>

#include "comm/fault_agreement.hpp"
#include "comm/transport/thread_transport.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

thread_local const ThreadWorldHandle* t_world = nullptr;  // the world of a rank thread

// Rethrows `e` with "rank r: " in front of its message, keeping the tierzero exception type.
[[noreturn]] void rethrow_with_rank(std::exception_ptr e, int rank) {
  try {
    std::rethrow_exception(e);
  } catch (const InputError& x) {
    throw InputError(fmt::format("rank {}: {}", rank, x.what()));
  } catch (const CommError& x) {
    throw CommError(fmt::format("rank {}: {}", rank, x.what()));
  } catch (const TrainingError& x) {
    throw TrainingError(fmt::format("rank {}: {}", rank, x.what()));
  } catch (const InternalError& x) {
    throw InternalError(fmt::format("rank {}: {}", rank, x.what()));
  } catch (const std::exception& x) {
    throw std::runtime_error(fmt::format("rank {}: {}", rank, x.what()));
  }
}

// Runs each rank on its own thread. The communicator (and mesh) of a rank outlive its try block, so
// that a failing rank aborts the world before its communicator's destructor waits for its progress
// thread: peers blocked in a collective with it are released at once, not at their timeout.
void run_ranks(int n, CommOptions options, const Topology* topology,
               const std::function<void(Communicator&)>& fn, const std::function<void(Mesh&)>& mesh_fn,
               const TransportWrap& wrap) {
  validate_comm_options(options);  // here, not in the rank threads' make_communicator: nothing to catch there
  if (options.ranks_on_host == 0) options.ranks_on_host = n;  // every rank is a thread of this process
  ThreadWorldHandle h = make_thread_world(n);
  if (wrap) {
    h.transports = wrap(std::move(h.transports));
    TZ_CHECK_EQ(h.transports.size(), static_cast<std::size_t>(n));
  }
  // One flight recorder and fault agreement per rank, over a shared board (they outlive the ranks'
  // communicators: a rank that returned still answers the exchange with what it did). The recorders
  // of one world share its run id.
  ThreadFaultBoard board(n);
  const std::string run_id = new_flight_run_id();
  std::vector<std::shared_ptr<FlightRecorder>> recorders(n);
  std::vector<std::shared_ptr<FaultAgreement>> agreements(n);
  for (int r = 0; r < n; ++r) {
    recorders[r] = std::make_shared<FlightRecorder>(r, n, run_id, options.flight_recorder_entries);
    agreements[r] = std::make_shared<FaultAgreement>(recorders[r], options.fault_agreement_timeout_s);
    agreements[r]->set_channel(&board);
    agreements[r]->install_timeout_hook();
    board.attach(r, agreements[r]);
  }
  std::mutex mu;
  std::exception_ptr first;
  int first_rank = -1;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      t_world = &h;
      std::unique_ptr<Communicator> comm =
          make_communicator(std::move(h.transports[r]), "world", options, nullptr, recorders[r]);
      std::unique_ptr<Mesh> mesh;
      try {
        if (topology) {
          mesh = std::make_unique<Mesh>(*topology, std::move(comm));
          mesh_fn(*mesh);
        } else {
          fn(*comm);
        }
      } catch (...) {
        {
          std::lock_guard lock(mu);
          if (!first) {
            first = std::current_exception();
            first_rank = r;
          }
        }
        h.abort(fmt::format("rank {} failed", r));
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) rethrow_with_rank(first, first_rank);
}

}  // namespace

bool abort_thread_world_of_caller(const std::string& reason) {
  if (!t_world) return false;
  t_world->abort(reason);
  return true;
}

void run_thread_world(int n, const std::function<void(Communicator&)>& fn, CommOptions options) {
  run_ranks(n, options, nullptr, fn, nullptr, nullptr);
}

void run_thread_mesh(const Topology& topology, const std::function<void(Mesh&)>& fn, CommOptions options,
                     const TransportWrap& wrap) {
  run_ranks(topology.world_size(), options, &topology, nullptr, fn, wrap);
}

}  // namespace tz
