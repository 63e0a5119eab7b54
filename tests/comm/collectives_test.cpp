// Single-tier collectives, one CTest entry per transport x group size x count x algorithm path:
// closed-form expected values, group sizes 1 to 8, 0- and 1-element inputs, counts that do not divide
// the group, tiny chunks and staging buffers that force the pipelined multi-chunk and multi-round
// paths, every collective over the shared-memory algorithms and over the transport's (each also
// under injected delays), on ranks as threads and on the simulated-clock transport.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <vector>

#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/sim_transport.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

CommOptions small_chunks() {
  CommOptions o;
  o.chunk_bytes = 12;        // 3 floats: most test payloads take several chunks per block
  o.shared_slot_bytes = 64;  // 16 floats: the shared-memory all-gather takes several rounds
  o.timeout_s = 20;
  return o;
}

// The transport's algorithms (ring, pairwise exchange, binomial tree) instead of the shared-memory
// ones (which threads of one process may use).
CommOptions transport_algorithms(CommOptions o) {
  o.shared_memory_all_gather = o.shared_memory_all_to_all = o.shared_memory_broadcast =
      o.shared_memory_reduce_scatter = false;
  return o;
}

// Sleeps of up to 100 us before every send, receive and shared-memory publication.
CommOptions delayed(CommOptions o) {
  o.delay_injection = {.seed = 42, .max_us = 100};
  return o;
}

// One case: the transport (ranks as threads, or the same threads under a simulated clock, whose
// ranks share no memory), the group size, the count, and the algorithm path the options select.
enum class TransportKind { threads, simulated };
enum class Path {
  shared_default,
  shared_small,
  transport_default,
  transport_small,
  shared_small_delayed,
  transport_small_delayed
};

struct Case {
  TransportKind transport;
  int p;
  std::size_t count;
  Path path;
};

CommOptions options_of(Path path) {
  switch (path) {
    case Path::shared_default:
      return {};
    case Path::shared_small:
      return small_chunks();
    case Path::transport_default:
      return transport_algorithms({});
    case Path::transport_small:
      return transport_algorithms(small_chunks());
    case Path::shared_small_delayed:
      return delayed(small_chunks());
    case Path::transport_small_delayed:
      return delayed(transport_algorithms(small_chunks()));
  }
  return {};
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  static const char* paths[] = {"shared",          "shared_small",         "transport",
                                "transport_small", "shared_small_delayed", "transport_small_delayed"};
  const Case& c = info.param;
  return fmt::format("{}_p{}_n{}_{}", c.transport == TransportKind::threads ? "threads" : "sim", c.p, c.count,
                     paths[static_cast<int>(c.path)]);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8})
    for (std::size_t count : {0, 1, 7, 64}) {
      for (Path path : {Path::shared_default, Path::shared_small, Path::transport_default,
                        Path::transport_small, Path::shared_small_delayed, Path::transport_small_delayed})
        out.push_back({TransportKind::threads, p, count, path});
      out.push_back({TransportKind::simulated, p, count, Path::transport_small});
    }
  return out;
}

// Runs fn on every rank's world communicator over the case's transport.
void run_case(const Case& c, const std::function<void(Communicator&)>& fn) {
  const CommOptions options = options_of(c.path);
  if (c.transport == TransportKind::threads) {
    run_thread_world(c.p, fn, options);
    return;
  }
  const Topology flat = Topology::load("flat").resolve(c.p);
  auto world = std::make_shared<SimWorld>(flat, SimOptions{});
  run_thread_mesh(
      flat, [&](Mesh& mesh) { fn(mesh.world()); }, options,
      [&](std::vector<std::unique_ptr<Transport>> inner) {
        return make_sim_transports(world, std::move(inner));
      });
}

float value(int rank, std::size_t i) {
  return float(rank * 1000 + int(i));
}

class Collectives : public testing::TestWithParam<Case> {};

TEST_P(Collectives, AllGatherClosedForm) {
  const Case& c = GetParam();
  run_case(c, [&](Communicator& comm) {
    std::vector<float> send(c.count), recv(c.count * c.p, -1.f);
    for (std::size_t i = 0; i < c.count; ++i) send[i] = value(comm.rank(), i);
    comm.all_gather(send.data(), recv.data(), c.count, DType::f32).wait();
    for (int q = 0; q < c.p; ++q)
      for (std::size_t i = 0; i < c.count; ++i)
        ASSERT_EQ(recv[q * c.count + i], value(q, i))
            << "rank " << comm.rank() << " block " << q << " i " << i;
  });
}

TEST_P(Collectives, ReduceScatterClosedForm) {
  const Case& c = GetParam();
  run_case(c, [&](Communicator& comm) {
    const int p = comm.size(), r = comm.rank();
    std::vector<float> send(c.count * p), recv(c.count, -1.f);
    for (std::size_t j = 0; j < send.size(); ++j) send[j] = float(r + int(j));
    comm.reduce_scatter(send.data(), recv.data(), c.count, DType::f32).wait();
    for (std::size_t i = 0; i < c.count; ++i) {
      const float expected = float(p * (p - 1) / 2 + p * int(r * c.count + i));
      ASSERT_EQ(recv[i], expected) << "rank " << r << " i " << i;
    }
  });
}

TEST_P(Collectives, AllReduceClosedFormAnyCount) {
  const Case& c = GetParam();
  for (std::size_t count : {c.count, c.count + 3}) {  // + 3: counts that do not divide p
    run_case(c, [&](Communicator& comm) {
      const int p = comm.size(), r = comm.rank();
      std::vector<float> buf(count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = float(r) + float(i);
      comm.all_reduce(buf.data(), buf.data(), count, DType::f32).wait();  // in place
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(buf[i], float(p * (p - 1) / 2) + float(p * int(i)))
            << "count=" << count << " rank " << r << " i " << i;
    });
  }
}

TEST_P(Collectives, AllToAllClosedForm) {
  const Case& c = GetParam();
  run_case(c, [&](Communicator& comm) {
    const int p = comm.size(), r = comm.rank();
    std::vector<float> send(c.count * p), recv(c.count * p, -1.f);
    for (int j = 0; j < p; ++j)
      for (std::size_t i = 0; i < c.count; ++i) send[j * c.count + i] = float(r * 100 + j * 10) + float(i);
    comm.all_to_all(send.data(), recv.data(), c.count, DType::f32).wait();
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < c.count; ++i)
        ASSERT_EQ(recv[q * c.count + i], float(q * 100 + r * 10) + float(i)) << "rank " << r;
  });
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  const Case& c = GetParam();
  run_case(c, [&](Communicator& comm) {
    for (int root = 0; root < comm.size(); ++root) {
      std::vector<float> buf(c.count);
      for (std::size_t i = 0; i < c.count; ++i) buf[i] = comm.rank() == root ? value(root, i) : -1.f;
      comm.broadcast(buf.data(), c.count, DType::f32, root).wait();
      for (std::size_t i = 0; i < c.count; ++i)
        ASSERT_EQ(buf[i], value(root, i)) << "root " << root << " rank " << comm.rank();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(TransportsSizesPaths, Collectives, testing::ValuesIn(cases()), case_name);

TEST(CollectivesMisc, BarrierOrdersWrites) {
  for (int p : {1, 2, 3, 5, 8}) {
    std::vector<int> arrived(p, 0);
    run_thread_world(p, [&](Communicator& comm) {
      arrived[comm.rank()] = 1;
      comm.barrier().wait();
      for (int q = 0; q < p; ++q) ASSERT_EQ(arrived[q], 1) << "rank " << comm.rank() << " left before " << q;
    });
  }
}

TEST(CollectivesMisc, Bf16ReductionsAccumulateInFp32) {
  for (int p : {2, 3, 4}) {
    run_thread_world(
        p,
        [&](Communicator& comm) {
          const int r = comm.rank();
          const std::size_t count = 5;
          std::vector<bf16> send(count * p), recv(count), all(count * p);
          for (std::size_t j = 0; j < send.size(); ++j) send[j] = to_bf16(float(r + int(j)) * 0.5f);
          comm.reduce_scatter(send.data(), recv.data(), count, DType::bf16).wait();
          for (std::size_t i = 0; i < count; ++i)
            ASSERT_EQ(to_float(recv[i]), 0.5f * float(p * (p - 1) / 2 + p * int(r * count + i)));
          comm.all_reduce(send.data(), all.data(), count * p, DType::bf16).wait();
          for (std::size_t j = 0; j < all.size(); ++j)
            ASSERT_EQ(to_float(all[j]), 0.5f * float(p * (p - 1) / 2 + p * int(j)));
        },
        small_chunks());
  }
}

TEST(CollectivesMisc, F64AllReduce) {
  run_thread_world(3, [](Communicator& comm) {
    double x[2] = {0.25 * comm.rank(), 1e10};
    comm.all_reduce(x, x, 2, DType::f64).wait();
    EXPECT_DOUBLE_EQ(x[0], 0.75);
    EXPECT_DOUBLE_EQ(x[1], 3e10);
  });
}

TEST(CollectivesMisc, NonBlockingWorksCompleteInIssueOrder) {
  run_thread_world(4, [](Communicator& comm) {
    std::vector<std::vector<float>> in(6, std::vector<float>(10)), out(6, std::vector<float>(10));
    std::vector<Work> works;
    for (int k = 0; k < 6; ++k) {
      for (float& x : in[k]) x = float(k + comm.rank());
      works.push_back(comm.all_reduce(in[k].data(), out[k].data(), 10, DType::f32));
    }
    works[5].wait();  // later work done implies earlier ones are done
    for (int k = 0; k < 5; ++k) EXPECT_TRUE(works[k].done());
    for (int k = 0; k < 6; ++k) EXPECT_EQ(out[k][3], float(4 * k + 6));
    Work none;
    EXPECT_TRUE(none.done());
    none.wait();
  });
}

// Every shared all-to-all (staged per pair, staged per round, in place where this host allows it,
// and whichever `auto` picks here), with and without injected delays: calls back to back and after
// another shared collective, counts that take many chunks of the 64-byte staging, one element, and
// none.
TEST(CollectivesMisc, EverySharedAllToAll) {
  for (SharedAllToAll kind : {SharedAllToAll::pair_rings, SharedAllToAll::rounds, SharedAllToAll::in_place,
                              SharedAllToAll::automatic})
    for (bool delays : {false, true})
      for (int p : {2, 3, 5, 8}) {
        CommOptions o = delays ? delayed(small_chunks()) : small_chunks();
        o.shared_all_to_all = kind;
        run_thread_world(
            p,
            [&](Communicator& comm) {
              const int r = comm.rank();
              for (std::size_t count : {64, 7, 1, 0, 64}) {
                std::vector<float> send(count * p), recv(count * p, -1.f);
                for (int j = 0; j < p; ++j)
                  for (std::size_t i = 0; i < count; ++i)
                    send[j * count + i] = float(r * 1000 + j * 100) + float(i);
                comm.all_to_all(send.data(), recv.data(), count, DType::f32).wait();
                for (int q = 0; q < p; ++q)
                  for (std::size_t i = 0; i < count; ++i)
                    ASSERT_EQ(recv[q * count + i], float(q * 1000 + r * 100) + float(i))
                        << shared_all_to_all_name(kind) << " delays " << delays << " p " << p << " rank " << r
                        << " count " << count;
                if (count == 1) {  // a round-based collective on the same staging between two calls
                  std::vector<float> all(p);
                  const float mine = float(r);
                  comm.all_gather(&mine, all.data(), 1, DType::f32).wait();
                  for (int q = 0; q < p; ++q) ASSERT_EQ(all[q], float(q));
                }
              }
            },
            o);
      }
}

TEST(CollectivesMisc, BadArgumentsAreInputErrors) {
  run_thread_world(2, [](Communicator& comm) {
    std::uint8_t b[4] = {};
    EXPECT_THROW(comm.all_reduce(b, b, 4, DType::u8), InputError);
    EXPECT_THROW(comm.broadcast(b, 4, DType::u8, 2), InputError);
  });
}

}  // namespace
}  // namespace tz
