#pragma once
/// \file
/// \brief The host backend's worker threads: chunks claimed one at a time, a short spin, then sleep.
///
/// Why not OpenMP: libgomp's waiting threads spin for a long time (and, with
/// `OMP_WAIT_POLICY=active`, forever) and its static schedule hands each thread a fixed share,
/// so on a machine whose cores are busy with another process the join waits for a descheduled
/// thread while the others spin on the core it needs; the fix there (`OMP_WAIT_POLICY`,
/// `GOMP_SPINCOUNT`) is process-wide environment that a library must not set for its user.
/// Here the calling thread takes part and every chunk is claimed by whichever thread gets to it
/// first, so a worker that has not woken up yet costs nothing: the caller runs its chunk
/// instead. A waiting thread spins for a short, bounded time (keeping back-to-back ops of one
/// forward pass free of wake-up latency) and then sleeps on a condition variable.
/// docs/performance.md has the measurements behind these choices.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "muninn/backend/usable_cores.hpp"
#include "muninn/core/error.hpp"

namespace muninn {
namespace detail {

/// \brief One iteration of a spin-wait: tells the core (and a hyper-threaded sibling) we are waiting.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/// \brief Parses a positive thread count from environment variable `name`; 0 when unset.
///
/// `strict` (Muninn's own variable): anything but a positive integer is an error naming it.
/// Otherwise (OpenMP's `OMP_NUM_THREADS`, which may hold a list such as `4,2`) the leading
/// integer is taken and anything unreadable is ignored, as it is not ours to judge.
inline int env_thread_count(const char* name, bool strict) {
  const char* s = std::getenv(name);
  if (!s || !*s) return 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  const bool whole = end && *end == '\0';
  if (strict) {
    MUNINN_CHECK(whole && v > 0 && v <= 4096, name, "='", s, "' is not a thread count (a whole number from 1 to 4096)");
    return int(v);
  }
  return end != s && v > 0 && v <= 4096 ? int(v) : 0;
}

/// \brief A bounded spin-wait: pause instructions, a yield of the core every 64 of them (so that a
/// thread we wait for, queued behind us on this core, gets to run), and false once `limit` is over.
class spinner {
 public:
  explicit spinner(std::chrono::nanoseconds limit) : until_(std::chrono::steady_clock::now() + limit) {}
  /// \brief Waits a little; false when the spin time is over and the caller should sleep.
  bool spin() {
    spin_pause();
    if ((++n_ & 63) != 0) return true;
    if (std::chrono::steady_clock::now() > until_) return false;
    std::this_thread::yield();
    return true;
  }

 private:
  std::chrono::steady_clock::time_point until_;
  unsigned n_ = 0;
};

}  // namespace detail

/// \brief Threads the host backend uses when none are asked for: `MUNINN_NUM_THREADS`, else
/// `OMP_NUM_THREADS` (the variable users of ML tools already set), else usable_cores().
///
/// Read once, at the first call.
inline int default_host_threads() {
  static const int n = [] {
    if (const int v = detail::env_thread_count("MUNINN_NUM_THREADS", true)) return v;
    if (const int v = detail::env_thread_count("OMP_NUM_THREADS", false)) return v;
    return usable_cores();
  }();
  return n;
}

/// \brief A fork/join pool: the caller and up to `helpers` workers run `chunks` numbered pieces of work.
///
/// One job at a time: a call made while the pool is busy (from another thread, or from inside a
/// chunk) runs its chunks serially on its own thread instead of waiting. Chunks are claimed in
/// order through one atomic word that also carries the job's number, so a worker that wakes late
/// can never claim a chunk of a job that has moved on. A new job first publishes its number with
/// the chunk index closed, and only then rewrites the job's fields: a worker still holding the
/// previous job's word can therefore never pair it with the new job's chunk count (which once let
/// such a worker claim one chunk past the old job's end, run it and count it into the new job, so
/// the caller waited for ever). A chunk that throws ends the job after the chunks already claimed;
/// the first exception is rethrown to the caller.
class thread_pool {
 public:
  /// \brief Starts `workers` threads (the caller is one more).
  explicit thread_pool(int workers) { grow(workers); }
  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// \brief Worker threads started so far.
  int workers() const { return int(threads_.size()); }

  /// \brief How long a waiting thread spins before it sleeps (default 100 µs, or `MUNINN_SPIN_US`).
  static std::chrono::nanoseconds spin_time() {
    static const long long us = [] {
      const char* s = std::getenv("MUNINN_SPIN_US");
      if (!s || !*s) return 100LL;
      char* end = nullptr;
      const long long v = std::strtoll(s, &end, 10);
      MUNINN_CHECK(end && *end == '\0' && v >= 0 && v <= 1000000, "MUNINN_SPIN_US='", s,
                   "' is not a spin time (a whole number of microseconds from 0 to 1000000)");
      return v;
    }();
    return std::chrono::microseconds(us);
  }

  /// \brief Calls `body(i)` for every i in [0, chunks) on this thread and at most `helpers` workers.
  template <class F>
  void run(std::int64_t chunks, int helpers, F&& body) {
    if (chunks <= 0) return;
    const bool too_many = chunks >= std::int64_t(closed);  // the index field's range; never met in practice
    if (chunks == 1 || too_many || helpers <= 0 || in_job() || busy_.exchange(true, std::memory_order_acquire)) {
      for (std::int64_t i = 0; i < chunks; ++i) body(i);
      return;
    }
    struct release {
      std::atomic<bool>& b;
      ~release() { b.store(false, std::memory_order_release); }
    } unbusy{busy_};
    if (helpers > workers()) grow(helpers);
    using Body = std::remove_reference_t<F>;
    call_ = [](void* ctx, std::int64_t i) { (*static_cast<Body*>(ctx))(i); };
    ctx_ = const_cast<void*>(static_cast<const void*>(&body));
    const std::uint64_t job = (word_.load(std::memory_order_relaxed) >> 32) + 1;
    word_.store(job << 32 | closed);  // from here no claim on the previous job's word succeeds
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    helpers_.store(helpers, std::memory_order_relaxed);
    // release: a thread that reads this count also sees the closed word above, so its claim
    // with an older word fails (see work)
    chunks_.store(chunks, std::memory_order_release);
    word_.store(job << 32);  // seq_cst: opens the job; pairs with a sleeping worker's check (see wait_for_job)
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lk(mutex_); }
      wake_.notify_all();
    }
    work(job);
    wait_done(chunks);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static bool& in_job() {
    static thread_local bool flag = false;
    return flag;
  }

  void grow(int workers) {
    const std::uint64_t job = word_.load() >> 32;
    for (int i = int(threads_.size()); i < workers; ++i) threads_.emplace_back([this, i, job] { worker(i, job); });
  }

  // Claims and runs chunks of job `job` until none is left or the job has moved on.
  void work(std::uint64_t job) {
    in_job() = true;
    std::uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if ((w >> 32) != job) break;
      const std::int64_t i = std::int64_t(w & closed);
      // acquire: if this is a newer job's count, the CAS below sees that job's closed word and fails
      const std::int64_t chunks = chunks_.load(std::memory_order_acquire);
      if (i >= chunks) break;
      if (!word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          call_(ctx_, i);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      finish_chunk(chunks);
      w = word_.load(std::memory_order_acquire);
    }
    in_job() = false;
  }

  void finish_chunk(std::int64_t chunks) {
    if (done_.fetch_add(1) + 1 == chunks && caller_sleeping_.load()) {
      { std::lock_guard<std::mutex> lk(mutex_); }
      done_cv_.notify_one();
    }
  }

  // The caller, after its own chunks: spin, then sleep until every claimed chunk has finished.
  void wait_done(std::int64_t chunks) {
    detail::spinner sp(spin_time());
    while (done_.load(std::memory_order_acquire) != chunks) {
      if (!sp.spin()) {
        std::unique_lock<std::mutex> lk(mutex_);
        caller_sleeping_.store(true);
        done_cv_.wait(lk, [&] { return done_.load() == chunks; });
        caller_sleeping_.store(false);
        break;
      }
    }
  }

  // A worker: wait for a job newer than `seen`, join it when its index is within the job's helpers.
  void worker(int index, std::uint64_t seen) {
    for (;;) {
      const std::uint64_t job = wait_for_job(seen);
      if (stop_.load()) return;
      seen = job;
      if (index < helpers_.load(std::memory_order_relaxed)) work(job);
    }
  }

  // A job is there to join once its number differs from `seen` and it is open (not being set up).
  static bool joinable(std::uint64_t w, std::uint64_t seen) { return (w >> 32) != seen && (w & closed) != closed; }

  std::uint64_t wait_for_job(std::uint64_t seen) {
    detail::spinner sp(spin_time());
    for (;;) {
      const std::uint64_t w = word_.load(std::memory_order_acquire);
      if (joinable(w, seen) || stop_.load(std::memory_order_relaxed)) return w >> 32;
      if (!sp.spin()) break;
    }
    std::unique_lock<std::mutex> lk(mutex_);
    sleepers_.fetch_add(1);
    std::uint64_t job = seen;
    wake_.wait(lk, [&] {
      const std::uint64_t w = word_.load();
      job = w >> 32;
      return joinable(w, seen) || stop_.load();
    });
    sleepers_.fetch_sub(1);
    return job;
  }

  // The chunk index of a job being set up: above any chunk count, so nothing can be claimed.
  static constexpr std::uint64_t closed = 0xffffffffu;

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_cv_;
  std::atomic<std::uint64_t> word_{0};  // job number << 32 | next unclaimed chunk
  std::atomic<std::int64_t> chunks_{0}, done_{0};
  std::atomic<int> helpers_{0}, sleepers_{0};
  std::atomic<bool> busy_{false}, stop_{false}, caller_sleeping_{false}, failed_{false};
  void (*call_)(void*, std::int64_t) = nullptr;
  void* ctx_ = nullptr;
  std::exception_ptr error_;
};

namespace detail {
/// \brief Set once the process-wide pool has been destroyed (static destruction at exit).
inline std::atomic<bool> host_pool_gone{false};
}  // namespace detail

/// \brief The process-wide pool of the host backend, started at first use with
/// default_host_threads() − 1 workers; null during static destruction, after it is gone.
inline thread_pool* host_thread_pool() {
  struct holder {
    thread_pool pool{default_host_threads() - 1};
    ~holder() { detail::host_pool_gone.store(true); }
  };
  if (detail::host_pool_gone.load(std::memory_order_relaxed)) return nullptr;
  static holder h;
  return &h.pool;
}

}  // namespace muninn
