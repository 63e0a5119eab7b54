// tierzero's one threading runtime for compute kernels: a small pool whose workers, between jobs,
// poll for the next one for 50 microseconds and then sleep on a condition variable (two pools that
// spin on the same cores cost 1.4-3x on small machines, so there is never a second one, and the poll
// is bounded). parallel_for splits [0, n) into chunks; the calling
// thread works too. A parallel_for issued while the pool is busy (a nested call, or another
// rank-thread of the same process) runs inline on its caller, so the pool is safe to share.
#pragma once

#include <cstddef>
#include <functional>

namespace tz {

// Threads parallel_for may use (>= 1). Default 1. The model's set_kernel_threads
// (model/kernel_threads.hpp) sets this and the BLAS library's thread count together.
void set_parallel_threads(int threads);
int parallel_threads();

// Runs fn(begin, end) over disjoint chunks covering [0, n), at most parallel_threads() at once. Chunks
// hold at least `grain` items (the last may hold fewer).
void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

}  // namespace tz
