#pragma once
/// \file
/// \brief The CUDA backend: device buffers, one stream, a cuBLAS handle and a growable workspace.

#if !defined(__CUDACC__)
#error "muninn/backend/cuda.cuh is CUDA-only: compile this file with nvcc (host code uses muninn/backend/host.hpp)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "muninn/core/error.hpp"

namespace muninn {
namespace detail {

/// \brief Throws muninn::error for a failed CUDA runtime call, after clearing the runtime's
/// last-error slot so that a later launch check does not report this failure again.
[[noreturn]] inline void cuda_fail(const char* call, const char* file, int line, cudaError_t e) {
  (void)cudaGetLastError();
  fail("CUDA error in ", call, " at ", file, ":", line, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

/// \brief Throws muninn::error for a failed cuBLAS call.
[[noreturn]] inline void cublas_fail(const char* call, const char* file, int line, cublasStatus_t s) {
  fail("cuBLAS error in ", call, " at ", file, ":", line, ": ", cublasGetStatusName(s), " (",
       cublasGetStatusString(s), ")");
}

}  // namespace detail
}  // namespace muninn

/// \brief Evaluates a CUDA runtime call and throws muninn::error naming it, file:line and the error.
#define MUNINN_CUDA_CHECK(call)                                                 \
  do {                                                                          \
    const cudaError_t muninn_cuda_status_ = (call);                             \
    if (muninn_cuda_status_ != cudaSuccess)                                     \
      ::muninn::detail::cuda_fail(#call, __FILE__, __LINE__, muninn_cuda_status_); \
  } while (0)

/// \brief Evaluates a cuBLAS call and throws muninn::error naming it, file:line and the status.
#define MUNINN_CUBLAS_CHECK(call)                                                   \
  do {                                                                              \
    const cublasStatus_t muninn_cublas_status_ = (call);                            \
    if (muninn_cublas_status_ != CUBLAS_STATUS_SUCCESS)                             \
      ::muninn::detail::cublas_fail(#call, __FILE__, __LINE__, muninn_cublas_status_); \
  } while (0)

/// \brief Checks the launch of the kernel named `what` (configuration errors surface here;
/// faults inside the kernel surface at the next synchronising call).
#define MUNINN_CUDA_CHECK_LAUNCH(what)                                                      \
  do {                                                                                      \
    const cudaError_t muninn_cuda_status_ = cudaGetLastError();                             \
    if (muninn_cuda_status_ != cudaSuccess)                                                 \
      ::muninn::detail::cuda_fail("launch of " what, __FILE__, __LINE__, muninn_cuda_status_); \
  } while (0)

namespace muninn {

/// \brief Tag naming the CUDA backend in `static_assert`s and specialisations.
struct cuda_tag {};

/// \brief Owning, move-only array in device memory (cudaMalloc: 256-byte aligned).
///
/// The destructor frees with cudaFree, which waits for work still using the memory.
template <class T>
class cuda_buffer {
 public:
  cuda_buffer() = default;
  /// \brief Allocates `n` uninitialised elements on the current device.
  explicit cuda_buffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n * sizeof(T));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      fail("cudaMalloc of ", n * sizeof(T), " bytes (", n, " elements) failed: ", cudaGetErrorName(e), " (",
           cudaGetErrorString(e), ")");
    }
    data_ = static_cast<T*>(p);
  }
  /// \brief A buffer that reads `n` elements at device pointer `data`, owned by another buffer
  /// that outlives it, and frees nothing: one weight that several layers share.
  static cuda_buffer borrowed(T* data, std::size_t n) {
    cuda_buffer b;
    b.data_ = data;
    b.size_ = n;
    b.owns_ = false;
    return b;
  }
  /// \brief Takes over `o`'s memory.
  cuda_buffer(cuda_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), owns_(std::exchange(o.owns_, true)) {}
  /// \brief Frees the current memory and takes over `o`'s.
  cuda_buffer& operator=(cuda_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      owns_ = std::exchange(o.owns_, true);
    }
    return *this;
  }
  cuda_buffer(const cuda_buffer&) = delete;
  cuda_buffer& operator=(const cuda_buffer&) = delete;
  ~cuda_buffer() { release(); }

  /// \brief Device pointer to element 0 (nullptr when empty).
  T* data() { return data_; }
  /// \brief Device pointer to element 0 (nullptr when empty).
  const T* data() const { return data_; }
  /// \brief Number of elements.
  std::size_t size() const { return size_; }
  /// \brief True when the buffer holds no elements.
  bool empty() const { return size_ == 0; }
  /// \brief False for a borrowed() view of another buffer's memory.
  bool owns() const { return owns_; }

 private:
  void release() noexcept {
    if (data_ && owns_) (void)cudaFree(data_);  // a destructor cannot throw; a failed free leaks at worst
    data_ = nullptr;
    size_ = 0;
    owns_ = true;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  bool owns_ = true;
};

namespace detail {

/// \brief Switches the current device for a scope and restores it afterwards.
class cuda_device_guard {
 public:
  explicit cuda_device_guard(int device) {
    MUNINN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) MUNINN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~cuda_device_guard() { (void)cudaSetDevice(previous_); }
  cuda_device_guard(const cuda_device_guard&) = delete;
  cuda_device_guard& operator=(const cuda_device_guard&) = delete;

 private:
  int previous_ = 0;
};

/// \brief What copies of one cuda_backend share: the stream, the cuBLAS handle, the workspaces.
///
/// Built member by member in cuda_backend::create; the destructor releases whatever was made,
/// so a failure half-way through creation leaks nothing.
struct cuda_context {
  int device = 0;
  int sm_count = 0;
  cudaStream_t stream = nullptr;
  bool owns_stream = false;
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;
  std::size_t cublas_workspace_bytes = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;

  cuda_context() = default;
  cuda_context(const cuda_context&) = delete;
  cuda_context& operator=(const cuda_context&) = delete;
  ~cuda_context() {
    int previous = 0;
    const bool have_previous = cudaGetDevice(&previous) == cudaSuccess;
    (void)cudaSetDevice(device);
    if (stream) (void)cudaStreamSynchronize(stream);
    if (cublas) (void)cublasDestroy(cublas);
    if (cublas_workspace) (void)cudaFree(cublas_workspace);
    if (workspace) (void)cudaFree(workspace);
    if (stream && owns_stream) (void)cudaStreamDestroy(stream);
    if (have_previous) (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
  }
};

}  // namespace detail

/// \brief The CUDA backend. A small value type: copies share one stream, cuBLAS handle and
/// workspace (reference-counted), so passing it by value is cheap.
///
/// All ops run asynchronously on the backend's stream; upload and download block. Use one
/// backend (or copies of it) from one host thread at a time. The calling thread's current
/// device must be the backend's device when ops are launched (create() makes it current).
class cuda_backend {
 public:
  using tag = cuda_tag;  ///< backend tag
  template <class T>
  using buffer = cuda_buffer<T>;  ///< owning device buffer

  /// \brief An empty backend; every use throws until it is assigned from create().
  cuda_backend() = default;

  /// \brief Human-readable name for logs and benchmark contexts.
  static const char* name() { return "cuda"; }

  /// \brief True when a CUDA device can be used (driver present, at least one device).
  ///
  /// Never throws and never hangs: without a driver cudaGetDeviceCount fails at once.
  static bool available() {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return n > 0;
  }

  /// \brief Makes a backend on `device` with its own non-blocking stream, cuBLAS handle and
  /// cuBLAS workspace; makes `device` current for the calling thread.
  static cuda_backend create(int device = 0) { return make(device, nullptr); }

  /// \brief Makes a backend that launches on an existing stream of `device` (not owned, not
  /// destroyed), e.g. one that a framework already uses.
  static cuda_backend wrap_stream(int device, cudaStream_t stream) {
    MUNINN_CHECK(stream != nullptr, "cuda_backend::wrap_stream: null stream (the legacy default stream is not supported)");
    return make(device, stream);
  }

  /// \brief Allocates `n` uninitialised elements.
  template <class T>
  buffer<T> alloc(std::size_t n) const {
    detail::cuda_device_guard g(ctx().device);
    return buffer<T>(n);
  }
  /// \brief Allocates `n` elements zeroed on the stream (ordered before later ops).
  template <class T>
  buffer<T> alloc_zeroed(std::size_t n) const {
    buffer<T> b = alloc<T>(n);
    fill_zero(b.data(), n);
    return b;
  }
  /// \brief Sets `n` elements at device pointer `p` to zero bits, asynchronously on the stream.
  template <class T>
  void fill_zero(T* p, std::size_t n) const {
    if (n) MUNINN_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(T), ctx().stream));
  }
  /// \brief Copies `n` elements from host memory to device memory; returns when the copy is done
  /// (after the work queued before it), so `src` may be reused at once.
  template <class T>
  void upload(T* dst, const T* src, std::size_t n) const {
    if (n == 0) return;
    const auto& c = ctx();
    MUNINN_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyHostToDevice, c.stream));
    MUNINN_CUDA_CHECK(cudaStreamSynchronize(c.stream));
  }
  /// \brief Copies `n` elements from device memory to host memory after the work queued before
  /// it; returns when `dst` holds them.
  template <class T>
  void download(T* dst, const T* src, std::size_t n) const {
    if (n == 0) return;
    const auto& c = ctx();
    MUNINN_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost, c.stream));
    MUNINN_CUDA_CHECK(cudaStreamSynchronize(c.stream));
  }
  /// \brief Copies `n` elements device to device, asynchronously on the stream.
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    if (n) MUNINN_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, ctx().stream));
  }
  /// \brief Waits for all work queued on the stream; throws if any of it failed.
  void synchronize() const { MUNINN_CUDA_CHECK(cudaStreamSynchronize(ctx().stream)); }

  /// \brief The stream every op of this backend runs on.
  cudaStream_t stream() const { return ctx().stream; }
  /// \brief The cuBLAS handle, bound to stream().
  cublasHandle_t cublas() const { return ctx().cublas; }
  /// \brief The device ordinal.
  int device() const { return ctx().device; }
  /// \brief Streaming multiprocessors on the device (kernels size their grids from it).
  int sm_count() const { return ctx().sm_count; }
  /// \brief The device's name as the driver reports it (e.g. "NVIDIA H100 80GB HBM3").
  std::string device_name() const {
    cudaDeviceProp p{};
    MUNINN_CUDA_CHECK(cudaGetDeviceProperties(&p, ctx().device));
    return p.name;
  }

  /// \brief Scratch device memory of at least `bytes` bytes, shared by all ops of this backend.
  ///
  /// Ops on one stream run in order, so each op may use the whole workspace. Growing it
  /// synchronises the stream and reallocates, and is refused while the stream is being captured
  /// into a CUDA graph: call reserve_workspace() before capturing. The pointer stays valid until
  /// the next call that grows the workspace.
  void* workspace(std::size_t bytes) const {
    detail::cuda_context& c = ctx();
    if (bytes > c.workspace_bytes) grow_workspace(c, bytes);
    return c.workspace;
  }
  /// \brief Grows the workspace to at least `bytes` now, outside any graph capture.
  void reserve_workspace(std::size_t bytes) const { (void)workspace(bytes); }
  /// \brief Current workspace size in bytes.
  std::size_t workspace_size() const { return ctx().workspace_bytes; }

  /// \brief True when this backend was made by create() or wrap_stream().
  bool valid() const { return ctx_ != nullptr; }

 private:
  static constexpr std::size_t cublas_workspace_size = std::size_t(32) << 20;  // NVIDIA's advice for Hopper

  detail::cuda_context& ctx() const {
    MUNINN_CHECK(ctx_ != nullptr, "cuda_backend used before cuda_backend::create()");
    return *ctx_;
  }

  static cuda_backend make(int device, cudaStream_t external) {
    int count = 0;
    MUNINN_CUDA_CHECK(cudaGetDeviceCount(&count));
    MUNINN_CHECK(device >= 0 && device < count, "cuda_backend::create: device ", device, " does not exist (",
                 count, " CUDA device(s) present)");
    MUNINN_CUDA_CHECK(cudaSetDevice(device));
    auto c = std::make_shared<detail::cuda_context>();
    c->device = device;
    MUNINN_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device));
    if (external) {
      c->stream = external;
    } else {
      MUNINN_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
      c->owns_stream = true;
    }
    MUNINN_CUBLAS_CHECK(cublasCreate(&c->cublas));
    MUNINN_CUBLAS_CHECK(cublasSetStream(c->cublas, c->stream));
    // Default math: fp32 GEMMs stay exact fp32 (no TF32); bf16 GEMMs use tensor cores.
    MUNINN_CUBLAS_CHECK(cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH));
    // A workspace of our own keeps cuBLAS from allocating during graph capture.
    MUNINN_CUDA_CHECK(cudaMalloc(&c->cublas_workspace, cublas_workspace_size));
    c->cublas_workspace_bytes = cublas_workspace_size;
    MUNINN_CUBLAS_CHECK(cublasSetWorkspace(c->cublas, c->cublas_workspace, c->cublas_workspace_bytes));
    cuda_backend be;
    be.ctx_ = std::move(c);
    return be;
  }

  static void grow_workspace(detail::cuda_context& c, std::size_t bytes) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MUNINN_CUDA_CHECK(cudaStreamIsCapturing(c.stream, &capture));
    MUNINN_CHECK(capture == cudaStreamCaptureStatusNone, "cuda_backend: an op needs ", bytes,
                 " bytes of workspace but only ", c.workspace_bytes,
                 " are reserved and the stream is being captured; call reserve_workspace() before capturing");
    detail::cuda_device_guard g(c.device);
    // Work still queued may use the old block.
    MUNINN_CUDA_CHECK(cudaStreamSynchronize(c.stream));
    if (c.workspace) MUNINN_CUDA_CHECK(cudaFree(c.workspace));
    c.workspace = nullptr;
    c.workspace_bytes = 0;
    const std::size_t rounded = ((bytes + (std::size_t(1) << 20) - 1) >> 20) << 20;  // whole MiB
    MUNINN_CUDA_CHECK(cudaMalloc(&c.workspace, rounded));
    c.workspace_bytes = rounded;
  }

  std::shared_ptr<detail::cuda_context> ctx_;
};

}  // namespace muninn
