// The Communicator over any Transport (make_communicator). Like a NCCL stream, each communicator has
// a Stream (stream.hpp) that runs its collectives in issue order, on its progress thread or on a
// thread waiting for them; the caller gets a Work handle at once. Arguments are validated at issue time on
// the calling thread (InputError); a failure while communicating (timeout, size mismatch, a failed
// dependency) is a CommError, fails that Work, and leaves the communicator unusable: every later collective
// on it fails at once with the first error, as in NCCL after an abort, since the ranks no longer agree on
// what comes next. Sequence numbers count the collectives (and splits) issued on this communicator, from 1.
#include <fmt/format.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "comm/algorithms.hpp"
#include "comm/communicator.hpp"
#include "comm/delay_injector.hpp"
#include "comm/shared_arena.hpp"
#include "comm/transport/delay_transport.hpp"
#include "core/cpu_terms.hpp"
#include "core/error.hpp"
#include "device/cpu/reduce.hpp"
#include "device/stream.hpp"
#include "device/work_state.hpp"

namespace tz {
namespace {

// What every rank of a group must agree on before a collective (CommOptions::check_collectives).
struct Signature {
  std::uint32_t kind = 0;
  std::int32_t root = -1;
  std::uint64_t count = 0;
  std::uint64_t seq = 0;
  std::uint64_t group = 0;  // hash of the group's label and members: the same group on every rank
  std::uint32_t dtype = 0;
  std::uint32_t pad = 0;
  bool operator==(const Signature&) const = default;
};

std::uint64_t group_hash(const std::string& label, Transport& t) {
  std::uint64_t h = std::hash<std::string>{}(label);
  for (int i = 0; i < t.size(); ++i) h = h * 1000003u ^ static_cast<std::uint64_t>(t.world_rank(i));
  return h;
}

std::string describe(const Signature& s) {
  std::string out = fmt::format("{} count={} dtype={}", collective_name(static_cast<CollectiveKind>(s.kind)),
                                s.count, dtype_name(static_cast<DType>(s.dtype)));
  if (s.root >= 0) out += fmt::format(" root={}", s.root);
  out += fmt::format(" seq={} group={:016x}", s.seq, s.group);
  return out;
}

// Every rank gets every signature (an all-gather), so all fail together with the same report.
void check_signatures(Collective& c, const Signature& mine) {
  const int p = c.size();
  auto* all = reinterpret_cast<Signature*>(c.workspace().get(7, p * sizeof(Signature)));
  all_gather_ring(c, reinterpret_cast<const std::byte*>(&mine), reinterpret_cast<std::byte*>(all),
                  uniform_block_offsets(sizeof(Signature), p));
  int first = -1;
  for (int i = 1; i < p && first < 0; ++i)
    if (!(all[i] == all[0])) first = i;
  if (first < 0) return;
  std::map<std::string, std::vector<int>> groups;
  for (int i = 0; i < p; ++i) groups[describe(all[i])].push_back(c.transport().world_rank(i));
  std::string what = fmt::format(
      "collective check failed: world rank {} differs from world rank {}: {} vs {}; ranks disagree:",
      c.transport().world_rank(first), c.transport().world_rank(0), describe(all[first]), describe(all[0]));
  for (const auto& [sig, ranks] : groups)
    what += fmt::format(" world rank(s) {{{}}}: {};", fmt::join(ranks, ","), sig);
  what.pop_back();
  c.fail(what);
}

class StreamCommunicator final : public Communicator {
 public:
  StreamCommunicator(std::unique_ptr<Transport> transport, std::string label, CommOptions options,
                     std::shared_ptr<TrafficLedger> ledger, std::shared_ptr<FlightRecorder> recorder)
      : transport_(std::move(transport)),
        label_(std::move(label)),
        options_(options),
        ledger_(ledger ? std::move(ledger) : std::make_shared<TrafficLedger>()),
        recorder_(recorder ? std::move(recorder)
                           : std::make_shared<FlightRecorder>(transport_->world_rank(transport_->rank()),
                                                              transport_->size(), new_flight_run_id(),
                                                              options_.flight_recorder_entries)),
        ring_(recorder_->add_ring(label_, members(*transport_), transport_->rank())),
        stream_(std::make_shared<Stream>()) {}

  // Runs what is still queued (Works may be dropped unwaited), then stops the progress thread.
  ~StreamCommunicator() override { stream_->shutdown(); }

  int rank() const override { return transport_->rank(); }
  int size() const override { return transport_->size(); }
  const std::string& label() const override { return label_; }
  const CommOptions& options() const override { return options_; }
  TrafficLedger& ledger() override { return *ledger_; }
  const std::shared_ptr<FlightRecorder>& recorder() const override { return recorder_; }
  bool can_share_memory() const override { return transport_->can_share_memory(); }

  Work all_gather(const void* send, void* recv, std::size_t count, DType dtype,
                  StepAlgorithm algorithm) override {
    require_algorithm("all_gather", algorithm, StepAlgorithm::ring);
    const std::size_t block = count * dtype_bytes(dtype);
    return submit(CollectiveKind::all_gather, count, dtype, -1, double(block) * size(),
                  [=, this](Collective& c) {
                    const Staged io = stage_in(c, send, block, recv, block * size());
                    if (SharedArena* arena = arena_for(c, algorithm, options_.shared_memory_all_gather)) {
                      started(c, CollectiveKind::all_gather, StepAlgorithm::shared_memory);
                      all_gather_shared(c, *arena, io.in, io.out, uniform_block_offsets(block, size()));
                    } else {
                      started_on_transport(c, CollectiveKind::all_gather, algorithm, StepAlgorithm::ring);
                      all_gather_ring(c, io.in, io.out, uniform_block_offsets(block, size()));
                    }
                    stage_out(io, recv, block * size());
                  });
  }

  Work reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                      StepAlgorithm algorithm) override {
    require_reducible("reduce_scatter", dtype);
    require_algorithm("reduce_scatter", algorithm, StepAlgorithm::ring);
    const std::size_t block = count * dtype_bytes(dtype);
    return submit(
        CollectiveKind::reduce_scatter, count, dtype, -1, double(block) * size(), [=, this](Collective& c) {
          const Staged io = stage_in(c, send, block * size(), recv, block);
          if (SharedArena* arena = arena_for(c, algorithm, options_.shared_memory_reduce_scatter)) {
            started(c, CollectiveKind::reduce_scatter, StepAlgorithm::shared_memory);
            reduce_scatter_shared(c, *arena, io.in, io.out, uniform_block_offsets(block, size()), dtype);
          } else {
            started_on_transport(c, CollectiveKind::reduce_scatter, algorithm, StepAlgorithm::ring);
            reduce_scatter_ring(c, io.in, io.out, uniform_block_offsets(block, size()), dtype);
          }
          stage_out(io, recv, block);
        });
  }

  Work all_reduce(const void* send, void* recv, std::size_t count, DType dtype) override {
    require_reducible("all_reduce", dtype);
    return submit(CollectiveKind::all_reduce, count, dtype, -1, double(count * dtype_bytes(dtype)),
                  [=, this](Collective& c) {
                    const std::size_t bytes = count * dtype_bytes(dtype);
                    const Staged io = stage_in(c, send, bytes, recv, bytes);
                    if (SharedArena* arena = shared_arena(
                            c, options_.shared_memory_reduce_scatter && options_.shared_memory_all_gather)) {
                      started(c, CollectiveKind::all_reduce, StepAlgorithm::shared_memory);
                      all_reduce_shared(c, *arena, io.in, io.out, count, dtype);
                    } else {
                      started(c, CollectiveKind::all_reduce, StepAlgorithm::ring);
                      all_reduce_ring(c, io.in, io.out, count, dtype);
                    }
                    stage_out(io, recv, bytes);
                  });
  }

  Work all_to_all(const void* send, void* recv, std::size_t count, DType dtype,
                  StepAlgorithm algorithm) override {
    require_algorithm("all_to_all", algorithm, StepAlgorithm::pairwise);
    const std::size_t block = count * dtype_bytes(dtype);
    return submit(CollectiveKind::all_to_all, count, dtype, -1, double(block) * size(),
                  [=, this](Collective& c) {
                    const Staged io = stage_in(c, send, block * size(), recv, block * size());
                    const std::vector<std::size_t> off = uniform_block_offsets(block, size());
                    if (SharedArena* arena = arena_for(c, algorithm, options_.shared_memory_all_to_all)) {
                      started(c, CollectiveKind::all_to_all, StepAlgorithm::shared_memory);
                      switch (resolve_shared_all_to_all(options_.shared_all_to_all, *arena)) {
                        case SharedAllToAll::pair_rings:
                          all_to_all_pair_rings(c, *arena, io.in, off, io.out, off);
                          break;
                        case SharedAllToAll::in_place:
                          all_to_all_shared(c, *arena, io.in, off, io.out, off, block);
                          break;
                        default:
                          all_to_all_rounds(c, *arena, io.in, off, io.out, off, block);
                      }
                    } else {
                      started_on_transport(c, CollectiveKind::all_to_all, algorithm, StepAlgorithm::pairwise);
                      all_to_all_pairwise(c, io.in, off, io.out, off);
                    }
                    stage_out(io, recv, block * size());
                  });
  }

  Work broadcast(void* buf, std::size_t count, DType dtype, int root) override {
    if (root < 0 || root >= size())
      fail_input("broadcast on group '{}': root {} is not a rank of the group (size {})", label_, root,
                 size());
    const std::size_t bytes = count * dtype_bytes(dtype);
    return submit(CollectiveKind::broadcast, count, dtype, root, double(bytes), [=, this](Collective& c) {
      const Staged io = stage_in(c, buf, bytes, buf, bytes, /*one_buffer=*/true);
      if (SharedArena* arena = shared_arena(c, options_.shared_memory_broadcast)) {
        ring_->start(c.seq(), "shared");
        broadcast_shared(c, *arena, io.out, bytes, root);
      } else {
        ring_->start(c.seq(), "binomial");
        broadcast_binomial(c, io.out, bytes, root);
      }
      stage_out(io, buf, bytes);
    });
  }

  Work barrier() override {
    return submit(CollectiveKind::barrier, 0, DType::u8, -1, 0, [this](Collective& c) {
      ring_->start(c.seq(), "dissemination");
      barrier_dissemination(c);
    });
  }

  std::unique_ptr<Communicator> split(int color, int key, std::string label) override {
    auto state = std::make_shared<Work::State>(stream_);
    std::unique_ptr<Transport> sub;
    const std::uint64_t seq = ++next_seq_;
    ring_->issue(seq, "split", DType::u8, 2 * sizeof(int), 2 * sizeof(int));
    state->ticket = enqueue([this, state, seq, color, key, &sub] {
      run_guarded(state, seq, [&] {
        Collective c(*transport_, workspace_, "split", label_, seq, options_.timeout_s, options_.chunk_bytes);
        ring_->start(seq, "split_keys");
        const Deadline deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(options_.timeout_s));
        try {
          sub = transport_->split(color, key, deadline);
        } catch (const CommTimeout& e) {
          c.fail_timeout(e.what());
        } catch (const CommError& e) {
          c.fail(e.what());
        }
      });
    });
    Work(state).wait();
    // Not make_communicator: a delay transport's split is already wrapped.
    return std::make_unique<StreamCommunicator>(std::move(sub), std::move(label), options_, ledger_,
                                                recorder_);
  }

  void stream_wait(Work dependency) override {
    auto dep = work_state(dependency);
    if (!dep) return;
    enqueue([this, dep] {
      if (std::exception_ptr e = dep->wait_quietly(); e && broken_.empty()) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          broken_ = fmt::format("a collective it waited for (stream_wait) failed: {}", ex.what());
        }
      }
    });
  }

 private:
  // Staging (CommOptions::device): the transports move host memory. A buffer in memory of a backend
  // the host cannot address (told by its address, as a CUDA-aware MPI tells device pointers) is
  // copied into host memory of the communicator's workspace first (the input) and back last (the
  // output); host buffers are used as they are. Both copies run on the progress thread, in the
  // collective's place in the stream, as a non-CUDA-aware MPI is used. Input and output get separate
  // staging memory, so an input inside the output (an in-place all-gather, whose input may start
  // where the output does and be shorter) is read before anything is written; `one_buffer` stages
  // a buffer that is both (a broadcast's) once. On the cpu backend nothing is copied.
  struct Staged {
    const std::byte* in;
    std::byte* out;
    bool out_staged;
  };
  Staged stage_in(Collective& c, const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                  bool one_buffer = false) {
    Staged io{static_cast<const std::byte*>(send), static_cast<std::byte*>(recv), false};
    if (device_.host_addressable()) return io;
    if (device_.is_device_address(send)) {
      std::byte* in = c.workspace().get(kStageInSlot, std::max<std::size_t>(send_bytes, 1));
      device_.copy_to_host(in, send, send_bytes);
      io.in = in;
    }
    if (device_.is_device_address(recv)) {
      io.out = one_buffer ? const_cast<std::byte*>(io.in)
                          : c.workspace().get(kStageOutSlot, std::max<std::size_t>(recv_bytes, 1));
      io.out_staged = true;
    }
    return io;
  }
  void stage_out(const Staged& io, void* recv, std::size_t recv_bytes) {
    if (io.out_staged) device_.copy_to_device(recv, io.out, recv_bytes);
  }

  void require_reducible(const char* op, DType dtype) const {
    if (!dtype_reducible(dtype))
      fail_input("{} on group '{}': dtype {} cannot be summed", op, label_, dtype_name(dtype));
  }

  template <typename Body>
  Work submit(CollectiveKind kind, std::size_t count, DType dtype, int root, double payload_bytes,
              Body body) {
    // No stream for the waiter to help with: a thread waiting on a collective's Work blocks until the
    // progress thread has run it. (Helping once hung the engine's thread-world parity tests, when a
    // waiter could run tasks queued after its own; tickets now forbid that, see stream.hpp, but the
    // collectives keep to their progress threads, where a transport's progress is cheapest.)
    auto state = std::make_shared<Work::State>();
    const std::uint64_t seq = ++next_seq_;
    ring_->issue(seq, collective_name(kind), dtype, count, static_cast<std::uint64_t>(payload_bytes));
    enqueue([=, this] {
      run_guarded(state, seq, [&] {
        Collective c(*transport_, workspace_, collective_name(kind), label_, seq, options_.timeout_s,
                     options_.chunk_bytes);
        const double t0 = transport_->now_s();
        if (options_.check_collectives) {
          ring_->start(seq, "check");
          check_signatures(c, Signature{.kind = static_cast<std::uint32_t>(kind),
                                        .root = root,
                                        .count = count,
                                        .seq = seq,
                                        .group = group_hash(label_, *transport_),
                                        .dtype = static_cast<std::uint32_t>(dtype)});
        }
        {
          const CpuTermScope copies(CpuTerm::collective_copies);
          body(c);
        }
        ledger_->record(label_, kind, algorithmic_bytes(kind, payload_bytes, size()),
                        transport_->now_s() - t0);
      });
    });
    return Work(state);
  }

  // Runs on the progress thread: fails fast if an earlier collective failed, marks the communicator
  // broken on a new failure, and always finishes the Work.
  // Every outcome is written into the flight recorder's entry `seq`. A timeout goes to the rank's
  // timeout hook first (the fault agreement), whose verdict is added to the report.
  template <typename Fn>
  void run_guarded(const std::shared_ptr<Work::State>& state, std::uint64_t seq, Fn&& fn) {
    if (!broken_.empty()) {
      const std::string what =
          fmt::format("group '{}' is unusable after an earlier failure: {}", label_, broken_);
      ring_->finish(seq, what);
      state->finish(std::make_exception_ptr(CommError(what)));
      return;
    }
    try {
      fn();
      ring_->finish(seq, "");
      state->finish(nullptr);
    } catch (const CommTimeout& e) {
      std::string what = e.what();
      ring_->finish(seq, what, true);
      const std::string agreed = recorder_->on_timeout(what);
      if (!agreed.empty()) what += "; agreed by the live ranks: " + agreed;
      broken_ = what;
      state->finish(std::make_exception_ptr(CommTimeout(what)));
    } catch (const std::exception& e) {
      broken_ = e.what();
      ring_->finish(seq, broken_);
      state->finish(std::current_exception());
    } catch (...) {
      broken_ = "unknown exception";
      ring_->finish(seq, broken_);
      state->finish(std::current_exception());
    }
  }

  static std::vector<int> members(Transport& t) {
    std::vector<int> m(t.size());
    for (int i = 0; i < t.size(); ++i) m[i] = t.world_rank(i);
    return m;
  }

  // The algorithm a collective runs, in the flight recorder and the ledger.
  void started(Collective& c, CollectiveKind kind, StepAlgorithm algorithm) {
    ring_->start(c.seq(), step_algorithm_name(algorithm));
    ledger_->record_algorithm(label_, kind, algorithm);
  }
  // The transport's algorithm `transport` starts in place of `planned`: a planned shared-memory step
  // whose ranks could not map a segment falls back to it (every rank of the group agrees on the
  // arena, so all fall back together), counted in the ledger and marked in the flight recorder.
  void started_on_transport(Collective& c, CollectiveKind kind, StepAlgorithm planned,
                            StepAlgorithm transport) {
    if (planned != StepAlgorithm::shared_memory) return started(c, kind, transport);
    ring_->start(c.seq(), fmt::format("{} (shared memory unavailable)", step_algorithm_name(transport)));
    ledger_->record_algorithm(label_, kind, transport);
    ledger_->count_shared_memory_fallback();
  }

  // A planned algorithm must be one this collective has: the shared-memory one, or `transport`.
  void require_algorithm(const char* op, StepAlgorithm a, StepAlgorithm transport) const {
    TZ_CHECK(a == StepAlgorithm::automatic || a == StepAlgorithm::shared_memory || a == transport,
             "{} on group '{}' has no {} algorithm", op, label_, step_algorithm_name(a));
  }

  // The arena a step runs on, or null for the transport's algorithm: the plan's choice, or for a
  // direct call (automatic) the options'.
  SharedArena* arena_for(Collective& c, StepAlgorithm planned, bool option_allows) {
    return shared_arena(
        c, planned == StepAlgorithm::shared_memory || (planned == StepAlgorithm::automatic && option_allows));
  }

  // The group's shared-memory segment, opened by its first collective that may use it (the same
  // collective on every rank, as `wanted` comes from the options); null when not wanted or when the
  // ranks cannot share memory (then the transport's algorithm runs).
  SharedArena* shared_arena(Collective& c, bool wanted) {
    if (!wanted || size() < 2 || !transport_->can_share_memory()) return nullptr;
    if (!arena_tried_) {
      arena_tried_ = true;
      // The set-up exchanges messages within this collective: it is in it (not idle) for the fault
      // agreement while it waits there.
      ring_->start(c.seq(), "shared memory set-up");
      arena_ = SharedArena::open(c, options_.shared_slot_bytes, options_.shared_memory_single_copy,
                                 options_.ranks_on_host);
    }
    return arena_.get();
  }

  std::uint64_t enqueue(std::function<void()> task) { return stream_->enqueue(std::move(task)); }

  // Workspace slots of the staging buffers (the algorithms use 0-3 and 7).
  static constexpr int kStageInSlot = 10, kStageOutSlot = 11;

  std::unique_ptr<Transport> transport_;
  std::string label_;
  CommOptions options_;
  Backend& device_ = backend(options_.device);
  std::shared_ptr<TrafficLedger> ledger_;
  std::shared_ptr<FlightRecorder> recorder_;
  std::shared_ptr<FlightRing> ring_;
  std::uint64_t next_seq_ = 0;  // issuing thread only

  // Progress thread only.
  Workspace workspace_;
  std::string broken_;
  std::unique_ptr<SharedArena> arena_;
  bool arena_tried_ = false;

  std::shared_ptr<Stream> stream_;  // last: its tasks use the members above
};

}  // namespace

std::unique_ptr<Communicator> make_communicator(std::unique_ptr<Transport> transport, std::string label,
                                                CommOptions options, std::shared_ptr<TrafficLedger> ledger,
                                                std::shared_ptr<FlightRecorder> recorder) {
  TZ_CHECK(transport != nullptr);
  validate_comm_options(options);
  if (options.delay_injection.enabled()) {
    const std::uint64_t stream = delay_stream(transport->world_rank(transport->rank()), label);
    transport = make_delay_transport(std::move(transport), options.delay_injection, stream);
  }
  return std::make_unique<StreamCommunicator>(std::move(transport), std::move(label), options,
                                              std::move(ledger), std::move(recorder));
}

}  // namespace tz
