// CPU time by term (core/cpu_terms.hpp): nested scopes charge exclusively, the terms add up to the
// thread's CPU time inside a binding, work handed to a stream or the kernel pool is charged to its
// issuer, and nothing is charged without a binding.
#include "core/cpu_terms.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/parallel_for.hpp"
#include "device/host_stream.hpp"

namespace tz {
namespace {

// Burns about `ns` of this thread's CPU time.
void burn_cpu_ns(std::int64_t ns) {
  const std::int64_t t0 = thread_cpu_ns();
  volatile double x = 1;
  while (thread_cpu_ns() - t0 < ns)
    for (int i = 0; i < 1000; ++i) x = std::sqrt(x + 1.0);
}

TEST(CpuTerms, NestedScopesChargeExclusivelyAndAddUpToTheThreadsTime) {
  auto counters = std::make_shared<CpuTermCounters>();
  const std::int64_t t0 = thread_cpu_ns();
  {
    const CpuCountersBinding bound(counters.get(), CpuTerm::other);
    burn_cpu_ns(2'000'000);
    {
      const CpuTermScope model(CpuTerm::model);
      burn_cpu_ns(6'000'000);
      {
        const CpuTermScope narrowing(CpuTerm::narrowing);
        burn_cpu_ns(4'000'000);
      }
      const CpuWaitScope waiting;  // a wait that spins: its CPU time and wall time
      burn_cpu_ns(3'000'000);
    }
  }
  const double thread_s = 1e-9 * static_cast<double>(thread_cpu_ns() - t0);
  const CpuTermSeconds s = counters->totals();
  EXPECT_GE(s[CpuTerm::other], 2e-3);
  EXPECT_GE(s[CpuTerm::model], 6e-3);
  EXPECT_LT(s[CpuTerm::model], 9e-3);  // the nested 7 ms are not the model's
  EXPECT_GE(s[CpuTerm::narrowing], 4e-3);
  EXPECT_GE(s[CpuTerm::collective_wait], 3e-3);
  EXPECT_GE(s.wait_wall_s, s[CpuTerm::collective_wait]);
  EXPECT_EQ(s[CpuTerm::quantization], 0.0);
  EXPECT_LE(s.total_cpu_s(), thread_s);
  EXPECT_GE(s.total_cpu_s(), 15e-3);
}

TEST(CpuTerms, NothingIsChargedWithoutABinding) {
  auto counters = std::make_shared<CpuTermCounters>();
  {
    const CpuTermScope model(CpuTerm::model);
    burn_cpu_ns(1'000'000);
  }
  EXPECT_EQ(counters->totals().total_cpu_s(), 0.0);
  EXPECT_EQ(capture_cpu_context().counters, nullptr);
}

TEST(CpuTerms, WorkOnAHostStreamIsChargedToItsIssuer) {
  auto counters = std::make_shared<CpuTermCounters>();
  HostStream stream;
  {
    const CpuCountersBinding bound(counters.get(), CpuTerm::other);
    (void)stream.enqueue([] {
      const CpuTermScope quantizing(CpuTerm::quantization);
      burn_cpu_ns(5'000'000);
    });
  }
  // A task runs only once the one before has returned, its charging included.
  stream.enqueue([] {}).wait();
  EXPECT_GE(counters->totals()[CpuTerm::quantization], 5e-3);
}

TEST(CpuTerms, KernelPoolChunksAreChargedToTheCallersTerm) {
  auto counters = std::make_shared<CpuTermCounters>();
  set_parallel_threads(2);
  const std::int64_t t0 = thread_cpu_ns();
  {
    const CpuCountersBinding bound(counters.get(), CpuTerm::model);
    parallel_for(4, 1, [](std::size_t b, std::size_t e) {
      burn_cpu_ns(2'000'000 * static_cast<std::int64_t>(e - b));
    });
  }
  const double caller_s = 1e-9 * static_cast<double>(thread_cpu_ns() - t0);
  set_parallel_threads(1);
  // 8 ms of chunks in all, whichever thread ran them, all the model's; more than the caller's own
  // share when a worker took some.
  EXPECT_GE(counters->totals()[CpuTerm::model], 8e-3);
  EXPECT_LE(counters->totals()[CpuTerm::model], caller_s + 8e-3 + 2e-3);
}

}  // namespace
}  // namespace tz
