#include "model/kernel_threads.hpp"

#include <cblas.h>

#include "core/error.hpp"
#include "core/parallel_for.hpp"

namespace tz {

void set_kernel_threads(int threads) {
  TZ_CHECK_GE(threads, 1);
  if (parallel_threads() == threads && openblas_get_num_threads() == threads) return;
  openblas_set_num_threads(threads);
  set_parallel_threads(threads);
}

int kernel_threads() {
  return parallel_threads();
}

BlasSingleThreadScope::BlasSingleThreadScope() : saved_(openblas_get_num_threads()) {
  if (saved_ != 1) openblas_set_num_threads(1);
}
BlasSingleThreadScope::~BlasSingleThreadScope() {
  if (saved_ != 1) openblas_set_num_threads(saved_);
}

}  // namespace tz
