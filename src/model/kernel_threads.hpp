// One knob for the model's two threaded runtimes: tierzero's parallel_for pool (core/parallel_for.hpp)
// and OpenBLAS's own pthreads, so they never run more threads than asked for between them.
#pragma once

namespace tz {

// Threads for the model's kernels and for OpenBLAS (>= 1). Default 1.
void set_kernel_threads(int threads);
int kernel_threads();

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
