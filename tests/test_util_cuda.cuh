#pragma once
// Device helpers shared by the CUDA test binaries (test_ops_cuda.cu, test_model_cuda.cu): why a test is
// skipped, and moving float test data to and from T storage on the device.
#include <cstddef>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"

namespace muninn_test {

/// Why there is no usable CUDA device, for the skip message: "0 devices" or the runtime's error (an
/// old driver under a new runtime looks like "no device" too, so say which).
inline std::string no_cuda_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  return e == cudaSuccess ? "0 devices" : cudaGetErrorString(e);
}

/// The values as T would store them (what the device sees), back in float for the host oracle.
template <class T>
std::vector<float> rounded(std::vector<float> v) {
  for (auto& x : v) x = muninn::to_float(muninn::from_float<T>(x));
  return v;
}

/// A device buffer holding `v` converted to T.
template <class T>
muninn::cuda_buffer<T> to_device(const muninn::cuda_backend& be, const std::vector<float>& v) {
  std::vector<T> s(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) s[i] = muninn::from_float<T>(v[i]);
  auto b = be.alloc<T>(v.size());
  be.upload(b.data(), s.data(), s.size());
  return b;
}

/// `n` device values of type T at `p`, as float.
template <class T>
std::vector<float> to_host(const muninn::cuda_backend& be, const T* p, std::size_t n) {
  std::vector<T> s(n);
  be.download(s.data(), p, n);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = muninn::to_float(s[i]);
  return v;
}

}  // namespace muninn_test
