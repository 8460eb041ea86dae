#pragma once
// Pieces shared by the CUDA benchmarks (bench_cuda_ops.cu, bench_cuda_model.cu): what the device is and
// can move at most, the skip without a device, the run's context lines, and CUDA-event timing.
#include <benchmark/benchmark.h>

#include <string>

#include "muninn/cuda.cuh"

namespace muninn_bench {

/// Device 0 as the benchmarks see it: its properties and peak DRAM bandwidth, or why there is none.
struct cuda_device {
  bool ok = false;
  std::string name = "none";
  std::string reason;             ///< why there is no device
  int index = 0;                  ///< the device the properties belong to
  cudaDeviceProp prop{};          ///< valid when ok
  double peak_bytes_per_s = 0.0;  ///< DRAM bandwidth
};

/// Peak DRAM bandwidth: 2 (DDR) · memory clock · bus width, from the device attributes; a table
/// by name when the driver reports no clock (values: NVIDIA data sheets).
inline double peak_bandwidth(int dev, const std::string& name) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess && clock_khz > 0 &&
      bus_bits > 0)
    return 2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0;
  (void)cudaGetLastError();
  if (name.find("H200") != std::string::npos) return 4.8e12;
  if (name.find("H100") != std::string::npos) return name.find("PCIe") != std::string::npos ? 2.0e12 : 3.35e12;
  if (name.find("A100") != std::string::npos) return 2.0e12;
  return 0.0;
}

/// The device, probed once.
inline const cuda_device& device() {
  static const cuda_device d = [] {
    cuda_device r;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      (void)cudaGetLastError();
      r.reason = e != cudaSuccess ? cudaGetErrorString(e) : "0 devices";
      return r;
    }
    if (cudaGetDevice(&r.index) != cudaSuccess || cudaGetDeviceProperties(&r.prop, r.index) != cudaSuccess) {
      (void)cudaGetLastError();
      r.reason = "cudaGetDeviceProperties failed";
      return r;
    }
    r.ok = true;
    r.name = r.prop.name;
    r.peak_bytes_per_s = peak_bandwidth(r.index, r.name);
    return r;
  }();
  return d;
}

/// Marks the benchmark skipped ("no CUDA device: why") and returns true when there is no device.
inline bool skip_without_device(benchmark::State& st) {
  if (device().ok) return false;
  st.SkipWithError(("no CUDA device: " + device().reason).c_str());
  return true;
}

/// Adds the device name (or why there is none) and its peak bandwidth to the run's context.
inline void add_device_context() {
  const cuda_device& d = device();
  benchmark::AddCustomContext("cuda_device", d.ok ? d.name : "none (" + d.reason + ")");
  if (d.ok) benchmark::AddCustomContext("peak_bandwidth_GB/s", std::to_string(d.peak_bytes_per_s / 1e9));
}

/// Times calls with two events on the backend's stream. The interval covers every kernel the call
/// launches and, when the call ends with a blocking download, every host gap in it.
class event_timer {
 public:
  event_timer() {
    MUNINN_CUDA_CHECK(cudaEventCreate(&a_));
    MUNINN_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~event_timer() {
    (void)cudaEventDestroy(a_);
    (void)cudaEventDestroy(b_);
  }
  event_timer(const event_timer&) = delete;
  event_timer& operator=(const event_timer&) = delete;
  /// Seconds between an event before f() and one after it, on be's stream.
  template <class F>
  double seconds(const muninn::cuda_backend& be, F&& f) {
    MUNINN_CUDA_CHECK(cudaEventRecord(a_, be.stream()));
    f();
    MUNINN_CUDA_CHECK(cudaEventRecord(b_, be.stream()));
    MUNINN_CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0.0f;
    MUNINN_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return double(ms) * 1e-3;
  }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

/// The benchmark loop with manual time: each iteration calls prepare() untimed, then times op() with
/// CUDA events. Returns the total timed seconds.
template <class Prepare, class Op>
double timed_iterations(benchmark::State& st, const muninn::cuda_backend& be, Prepare&& prepare, Op&& op) {
  event_timer timer;
  double total = 0.0;
  for (auto _ : st) {
    prepare();
    const double s = timer.seconds(be, op);
    st.SetIterationTime(s);
    total += s;
  }
  return total;
}

/// timed_iterations with nothing to prepare between iterations.
template <class Op>
double timed_iterations(benchmark::State& st, const muninn::cuda_backend& be, Op&& op) {
  return timed_iterations(st, be, [] {}, op);
}

}  // namespace muninn_bench
