#include "core/parallel_for.hpp"

#include <immintrin.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cpu_terms.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

class Pool {
 public:
  ~Pool() { resize(1); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard busy(busy_);
    {
      std::lock_guard lk(mu_);
      stop_ = true;
      ++generation_;
      posted_.store(generation_);
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    stop_ = false;
    threads_ = threads;
    // Workers start from the current generation, so a job posted before they first wait still wakes them.
    const std::uint64_t start = generation_;
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, start] { work_loop(start); });
  }

  void run(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (n == 0) return;
    grain = std::max<std::size_t>(grain, 1);
    std::size_t chunks =
        std::min<std::size_t>((n + grain - 1) / grain, static_cast<std::size_t>(threads_) * 4);
    std::unique_lock busy(busy_, std::try_to_lock);
    if (threads_ == 1 || chunks <= 1 || !busy.owns_lock()) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard lk(mu_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      next_.store(0);
      pending_ = workers_.size();
      left_.store(workers_.size());
      ++generation_;
      posted_.store(generation_);
    }
    cv_.notify_all();
    drain();
    spin_until([&] { return left_.load() == 0; });
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    for (;;) {
      std::size_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      (*fn_)(n_ * c / chunks_, n_ * (c + 1) / chunks_);
    }
  }

  // Polls `ready` for a short while before the caller sleeps on a condition variable: a wake-up
  // through the kernel costs tens of microseconds (more in a virtual machine), and kernels post
  // jobs back to back.
  template <class Ready>
  static void spin_until(Ready&& ready) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!ready()) {
      if (std::chrono::steady_clock::now() - t0 > kSpin) return;
      for (int i = 0; i < 16; ++i) _mm_pause();
    }
  }

  void work_loop(std::uint64_t seen) {
    for (;;) {
      spin_until([&] { return posted_.load() != seen; });
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      drain();
      left_.fetch_sub(1);
      std::lock_guard lk(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::mutex busy_;  // held by the thread that owns the pool for one run()
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  int threads_ = 1;
  bool stop_ = false;
  std::uint64_t generation_ = 0;
  const std::function<void(std::size_t, std::size_t)>* fn_ = nullptr;
  std::size_t n_ = 0, chunks_ = 0, pending_ = 0;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::uint64_t> posted_{0};  // generation_, readable without the lock
  std::atomic<std::size_t> left_{0};      // pending_, readable without the lock
  static constexpr std::chrono::microseconds kSpin{50};
};

Pool& pool() {
  static Pool p;
  return p;
}

std::atomic<int> g_threads{0};

}  // namespace

void set_parallel_threads(int threads) {
  TZ_CHECK_GE(threads, 1);
  if (g_threads.load() == threads) return;
  pool().resize(threads);
  g_threads.store(threads);
}

int parallel_threads() {
  int t = g_threads.load();
  return t == 0 ? 1 : t;
}

void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
  if (g_threads.load() <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  // The chunks' CPU time is the caller's, under its term, whichever worker runs them.
  const CpuContext caller = capture_cpu_context();
  if (caller.counters == nullptr) {
    pool().run(n, grain, fn);
    return;
  }
  pool().run(n, grain, [&](std::size_t begin, std::size_t end) {
    const CpuContextScope charged(caller);
    fn(begin, end);
  });
}

}  // namespace tz
