#pragma once
/// \file
/// \brief The host (CPU) backend: aligned buffers and a parallel-for over the host thread pool.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "muninn/backend/thread_pool.hpp"
#include "muninn/core/error.hpp"

namespace muninn {

/// \brief Tag naming the host backend in `static_assert`s and specialisations.
struct host_tag {};

/// \brief Owning, 64-byte-aligned, move-only array in host memory.
template <class T>
class host_buffer {
 public:
  host_buffer() = default;
  /// \brief Allocates `n` uninitialised elements (rounded up to whole 64-byte lines); throws on failure.
  explicit host_buffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    const std::size_t bytes = ((n * sizeof(T) + 63) / 64) * 64;
    data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (!data_) fail("host allocation of ", bytes, " bytes failed");
  }
  /// \brief A buffer that reads `n` elements at `data`, owned by another buffer that outlives
  /// it, and frees nothing: one weight that several layers share (a Mixture-of-Recursions
  /// recursion whose copy of a tensor equals an earlier one's).
  static host_buffer borrowed(T* data, std::size_t n) {
    host_buffer b;
    b.data_ = data;
    b.size_ = n;
    b.owns_ = false;
    return b;
  }
  /// \brief Takes ownership of `o`'s memory, leaving `o` empty.
  host_buffer(host_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), owns_(std::exchange(o.owns_, true)) {}
  /// \brief Frees this buffer's memory, then takes `o`'s, leaving `o` empty.
  host_buffer& operator=(host_buffer&& o) noexcept {
    if (this != &o) {
      if (owns_) std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      owns_ = std::exchange(o.owns_, true);
    }
    return *this;
  }
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  ~host_buffer() {
    if (owns_) std::free(data_);
  }

  /// \brief First element; null when empty.
  T* data() { return data_; }
  /// \brief First element; null when empty.
  const T* data() const { return data_; }
  /// \brief Number of elements.
  std::size_t size() const { return size_; }
  /// \brief False for a borrowed() view of another buffer's memory.
  bool owns() const { return owns_; }
  /// \brief Element i (unchecked).
  T& operator[](std::size_t i) { return data_[i]; }
  /// \brief Element i (unchecked).
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  bool owns_ = true;
};

/// \brief The CPU backend. A small value type: copying it is free and shares nothing mutable.
///
/// Work is spread over the process-wide host_thread_pool(): the calling thread and
/// `threads() - 1` workers that spin briefly and then sleep (backend/thread_pool.hpp says why).
struct host_backend {
  using tag = host_tag;  ///< identifies this backend in compile-time dispatch
  /// \brief Owning array type for this backend's memory.
  template <class T>
  using buffer = host_buffer<T>;

  /// \brief Threads to use; 0 means default_host_threads() (`MUNINN_NUM_THREADS`, else
  /// `OMP_NUM_THREADS`, else the cores this process may use).
  int num_threads = 0;

  /// \brief Batch-invariant kernels: every GEMM sums each output element in one order fixed by K
  /// alone, whatever the number of rows in the call, so a row's results do not depend on which
  /// other rows share its call. Continuous batching needs it for a request to produce the same
  /// tokens in a batch as alone; it costs prefill speed (docs/performance.md, "Batch-invariant
  /// kernels"). Off: each row count gets its fastest kernel.
  bool batch_invariant = false;

  /// \brief q8 decode (a GEMM of one row against q8 weights, not batch-invariant) quantizes the
  /// activation row to int8 per block of 32 and runs integer dot products, as llama.cpp's Q8_0
  /// does: about twice the speed on AVX2 cores, for one more rounding (each activation within half
  /// a step of its block's amax/127; docs/performance.md, "Weight formats"). Off: the activations
  /// stay fp32 and each int8 weight is widened to fp32 instead. The front ends set it with
  /// `--q8-activations int8|fp32` (Python: `q8_activations`).
  bool q8_int8_activations = true;

  /// \brief Human-readable name for logs and benchmark contexts.
  static const char* name() { return "host"; }

  /// \brief Allocates `n` uninitialised elements.
  template <class T>
  buffer<T> alloc(std::size_t n) const {
    return buffer<T>(n);
  }
  /// \brief Allocates `n` zeroed elements.
  template <class T>
  buffer<T> alloc_zeroed(std::size_t n) const {
    buffer<T> b(n);
    if (n) std::memset(static_cast<void*>(b.data()), 0, n * sizeof(T));
    return b;
  }
  /// \brief Sets `n` elements at `p` to all-zero bytes.
  template <class T>
  void fill_zero(T* p, std::size_t n) const {
    if (n) std::memset(static_cast<void*>(p), 0, n * sizeof(T));
  }
  /// \brief Copies host memory into backend memory (here: a memcpy).
  template <class T>
  void upload(T* dst, const T* src, std::size_t n) const {
    if (n) std::memcpy(static_cast<void*>(dst), src, n * sizeof(T));
  }
  /// \brief Copies backend memory to host memory (here: a memcpy).
  template <class T>
  void download(T* dst, const T* src, std::size_t n) const {
    if (n) std::memcpy(static_cast<void*>(dst), src, n * sizeof(T));
  }
  /// \brief Copies within backend memory.
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    if (n) std::memmove(static_cast<void*>(dst), src, n * sizeof(T));
  }
  /// \brief Host work is synchronous; present so generic code can call it on every backend.
  void synchronize() const {}

  /// \brief Threads a parallel region will use.
  int threads() const { return num_threads > 0 ? num_threads : default_host_threads(); }

  /// \brief Calls `f(begin, end)` on disjoint chunks covering [0, n), on up to threads() threads.
  ///
  /// `grain` is the smallest chunk worth a thread: below `2 * grain` items the call stays on the
  /// calling thread, which keeps the tiny per-token ops of decode free of fork/join overhead.
  /// The chunks depend only on n, grain and threads(), never on timing, so which thread runs a
  /// chunk cannot change a result. There are up to `chunks_per_thread` chunks per thread, so that
  /// when a core is taken by another process the threads still running share out the rest.
  template <class F>
  void parallel_for(std::int64_t n, std::int64_t grain, F&& f) const {
    if (n <= 0) return;
    const std::int64_t g = std::max<std::int64_t>(grain, 1);
    const int nt = threads();
    thread_pool* pool = nt > 1 && n >= 2 * g ? host_thread_pool() : nullptr;
    if (!pool) {
      f(std::int64_t(0), n);
      return;
    }
    const std::int64_t chunks = std::min<std::int64_t>(std::int64_t(nt) * chunks_per_thread(), n / g);
    pool->run(chunks, nt - 1, [&](std::int64_t c) { f(n * c / chunks, n * (c + 1) / chunks); });
  }

  /// \brief Chunks per thread of a parallel_for (see there).
  static constexpr std::int64_t chunks_per_thread() { return 4; }
};

}  // namespace muninn
