// Single-tier collectives with ranks as threads: closed-form expected values, every group size from 1
// to 8, 0- and 1-element inputs, counts that do not divide the group, and tiny chunks that force the
// pipelined multi-chunk paths; all-gathers both over the ring and over shared memory.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/thread_world.hpp"
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

// The ring all-gather instead of the shared-memory one (which threads of one process may use).
CommOptions ring_all_gather(CommOptions o) {
  o.shared_memory_all_gather = false;
  return o;
}

struct Case {
  int p;
  std::size_t count;
  CommOptions options;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int p : {1, 2, 3, 4, 5, 8})
    for (std::size_t count : {0, 1, 7, 64})
      for (const CommOptions& o :
           {CommOptions{}, small_chunks(), ring_all_gather({}), ring_all_gather(small_chunks())})
        out.push_back({p, count, o});
  return out;
}

float value(int rank, std::size_t i) {
  return float(rank * 1000 + int(i));
}

TEST(Collectives, AllGatherClosedForm) {
  for (const Case& c : cases()) {
    run_thread_world(
        c.p,
        [&](Communicator& comm) {
          std::vector<float> send(c.count), recv(c.count * c.p, -1.f);
          for (std::size_t i = 0; i < c.count; ++i) send[i] = value(comm.rank(), i);
          comm.all_gather(send.data(), recv.data(), c.count, DType::f32).wait();
          for (int q = 0; q < c.p; ++q)
            for (std::size_t i = 0; i < c.count; ++i)
              ASSERT_EQ(recv[q * c.count + i], value(q, i)) << "p=" << c.p << " count=" << c.count << " rank "
                                                            << comm.rank() << " block " << q << " i " << i;
        },
        c.options);
  }
}

TEST(Collectives, ReduceScatterClosedForm) {
  for (const Case& c : cases()) {
    run_thread_world(
        c.p,
        [&](Communicator& comm) {
          const int p = comm.size(), r = comm.rank();
          std::vector<float> send(c.count * p), recv(c.count, -1.f);
          for (std::size_t j = 0; j < send.size(); ++j) send[j] = float(r + int(j));
          comm.reduce_scatter(send.data(), recv.data(), c.count, DType::f32).wait();
          for (std::size_t i = 0; i < c.count; ++i) {
            const float expected = float(p * (p - 1) / 2 + p * int(r * c.count + i));
            ASSERT_EQ(recv[i], expected) << "p=" << p << " count=" << c.count << " rank " << r << " i " << i;
          }
        },
        c.options);
  }
}

TEST(Collectives, AllReduceClosedFormAnyCount) {
  for (const Case& c : cases()) {
    for (std::size_t count : {c.count, c.count + 3}) {  // + 3: counts that do not divide p
      run_thread_world(
          c.p,
          [&](Communicator& comm) {
            const int p = comm.size(), r = comm.rank();
            std::vector<float> buf(count);
            for (std::size_t i = 0; i < count; ++i) buf[i] = float(r) + float(i);
            comm.all_reduce(buf.data(), buf.data(), count, DType::f32).wait();  // in place
            for (std::size_t i = 0; i < count; ++i)
              ASSERT_EQ(buf[i], float(p * (p - 1) / 2) + float(p * int(i)))
                  << "p=" << p << " count=" << count << " rank " << r << " i " << i;
          },
          c.options);
    }
  }
}

TEST(Collectives, AllToAllClosedForm) {
  for (const Case& c : cases()) {
    run_thread_world(
        c.p,
        [&](Communicator& comm) {
          const int p = comm.size(), r = comm.rank();
          std::vector<float> send(c.count * p), recv(c.count * p, -1.f);
          for (int j = 0; j < p; ++j)
            for (std::size_t i = 0; i < c.count; ++i)
              send[j * c.count + i] = float(r * 100 + j * 10) + float(i);
          comm.all_to_all(send.data(), recv.data(), c.count, DType::f32).wait();
          for (int q = 0; q < p; ++q)
            for (std::size_t i = 0; i < c.count; ++i)
              ASSERT_EQ(recv[q * c.count + i], float(q * 100 + r * 10) + float(i))
                  << "p=" << p << " rank " << r;
        },
        c.options);
  }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  for (const Case& c : cases()) {
    run_thread_world(
        c.p,
        [&](Communicator& comm) {
          for (int root = 0; root < comm.size(); ++root) {
            std::vector<float> buf(c.count);
            for (std::size_t i = 0; i < c.count; ++i) buf[i] = comm.rank() == root ? value(root, i) : -1.f;
            comm.broadcast(buf.data(), c.count, DType::f32, root).wait();
            for (std::size_t i = 0; i < c.count; ++i)
              ASSERT_EQ(buf[i], value(root, i)) << "p=" << c.p << " root " << root << " rank " << comm.rank();
          }
        },
        c.options);
  }
}

TEST(Collectives, BarrierOrdersWrites) {
  for (int p : {1, 2, 3, 5, 8}) {
    std::vector<int> arrived(p, 0);
    run_thread_world(p, [&](Communicator& comm) {
      arrived[comm.rank()] = 1;
      comm.barrier().wait();
      for (int q = 0; q < p; ++q) ASSERT_EQ(arrived[q], 1) << "rank " << comm.rank() << " left before " << q;
    });
  }
}

TEST(Collectives, Bf16ReductionsAccumulateInFp32) {
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

TEST(Collectives, F64AllReduce) {
  run_thread_world(3, [](Communicator& comm) {
    double x[2] = {0.25 * comm.rank(), 1e10};
    comm.all_reduce(x, x, 2, DType::f64).wait();
    EXPECT_DOUBLE_EQ(x[0], 0.75);
    EXPECT_DOUBLE_EQ(x[1], 3e10);
  });
}

TEST(Collectives, NonBlockingWorksCompleteInIssueOrder) {
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

TEST(Collectives, BadArgumentsAreInputErrors) {
  run_thread_world(2, [](Communicator& comm) {
    std::uint8_t b[4] = {};
    EXPECT_THROW(comm.all_reduce(b, b, 4, DType::u8), InputError);
    EXPECT_THROW(comm.broadcast(b, 4, DType::u8, 2), InputError);
  });
}

}  // namespace
}  // namespace tz
