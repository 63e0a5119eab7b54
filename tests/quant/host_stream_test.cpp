// Host streams and the scratch pool: tasks run in enqueue order behind their dependencies, a failed
// dependency or a throwing task fails that task's Work (and only it), a waiter may run the task
// itself, and pooled buffers come back for reuse from whichever thread drops them.
#include "device/host_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "quant/scratch_pool.hpp"

namespace tz {
namespace {

TEST(HostStream, TasksRunInEnqueueOrder) {
  HostStream s;
  std::vector<int> seen;
  std::vector<Work> works;
  for (int i = 0; i < 50; ++i) works.push_back(s.enqueue([&seen, i] { seen.push_back(i); }));
  works.back().wait();
  ASSERT_EQ(seen.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(seen[i], i);
  for (auto& w : works) EXPECT_TRUE(w.done());
}

TEST(HostStream, ATaskStartsOnlyAfterItsDependencies) {
  // The dependency is a collective whose peer arrives late: the task must see its result.
  run_thread_world(2, [](Communicator& comm) {
    HostStream s;
    std::vector<float> x(4, static_cast<float>(comm.rank() + 1)), all(8, 0.0f);
    if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const Work gathered = comm.all_gather(x.data(), all.data(), 4, DType::f32);
    float sum = 0;
    Work w = s.enqueue(
        [&] {
          for (float v : all) sum += v;
        },
        {gathered});
    w.wait();
    EXPECT_EQ(sum, 4 * 1.0f + 4 * 2.0f);
  });
}

TEST(HostStream, FailuresStayWithTheirTaskAndItsDependents) {
  HostStream s;
  std::atomic<bool> dependent_ran{false}, later_ran{false};
  Work bad = s.enqueue([] { throw InputError("task failed on purpose"); });
  Work dependent = s.enqueue([&] { dependent_ran = true; }, {bad});
  Work later = s.enqueue([&] { later_ran = true; });
  later.wait();
  EXPECT_TRUE(later_ran.load()) << "a failed task does not stop the stream";
  EXPECT_THROW(bad.wait(), InputError);
  try {
    dependent.wait();
    FAIL() << "a task behind a failed dependency must fail";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("on purpose"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(dependent_ran.load()) << "a task behind a failed dependency must not run";
}

TEST(HostStream, ThreadStreamsAreOnePerLaneAndPerThread) {
  HostStream* weights = &host_stream(HostLane::weights);
  EXPECT_EQ(weights, &host_stream(HostLane::weights));
  EXPECT_NE(weights, &host_stream(HostLane::gradients));
  HostStream* other = nullptr;
  std::thread([&] { other = &host_stream(HostLane::weights); }).join();
  EXPECT_NE(weights, other);
}

TEST(ScratchPool, BuffersComeBackForReuseFromAnyThread) {
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::emulated}) {
    ScratchPool pool(backend(kind));
    {
      ScratchBuffer a = pool.get(100), b = pool.get(1000);
      EXPECT_GE(a->size(), 100u);
      EXPECT_GE(b->size(), 1000u);
      EXPECT_NE(a.get(), b.get());
      std::thread([b = std::move(b)]() mutable { b.reset(); }).join();  // dropped on another thread
    }
    EXPECT_EQ(pool.buffers(), 2u);
    for (int i = 0; i < 10; ++i) {
      ScratchBuffer a = pool.get(1000), b = pool.get(50);
      EXPECT_GE(a->size(), 1000u);
    }
    EXPECT_EQ(pool.buffers(), 2u) << "steady-state use allocates nothing";
  }
}

}  // namespace
}  // namespace tz
