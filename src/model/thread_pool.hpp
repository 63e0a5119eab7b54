// The model's one threading runtime next to OpenBLAS's pthreads (MACHINE.md: never two spinning
// pools): a small pool whose workers sleep on a condition variable between jobs. parallel_for splits
// [0, n) into chunks; the calling thread works too. A parallel_for issued while the pool is busy (a
// nested call, or another rank-thread of the same process) runs inline on its caller, so the pool is
// safe to share. set_kernel_threads(n) also sets OpenBLAS's thread count, so one knob rules both.
#pragma once

#include <cstddef>
#include <functional>

namespace tz {

// Threads for the model's kernels and for OpenBLAS (>= 1). Default 1.
void set_kernel_threads(int threads);
int kernel_threads();

// Runs fn(begin, end) over disjoint chunks covering [0, n), at most kernel_threads() at once. Chunks
// hold at least `grain` items (the last may hold fewer).
void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

// Sets OpenBLAS to one thread for the scope (for BLAS calls made inside parallel_for), then restores.
class BlasSingleThreadScope {
 public:
  BlasSingleThreadScope();
  ~BlasSingleThreadScope();
  BlasSingleThreadScope(const BlasSingleThreadScope&) = delete;
  BlasSingleThreadScope& operator=(const BlasSingleThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace tz
