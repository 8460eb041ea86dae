// `--device cuda` of the muninn CLI: forward and generate on model<cuda_backend, float|bf16>.
//
// The CLI's only nvcc translation unit. main.cpp stays a g++ unit, so the host model keeps
// OpenMP, -march=native and the GCC loop pragmas of the host ops; only the two CUDA models the
// CLI offers are instantiated here (each instantiation is a large share of the compile time).

#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "commands.hpp"
#include "muninn/cuda.cuh"

namespace muninn::cli {
namespace {

/// The CLI compiles early exit in, as on the host; without --exit it runs like huginn_arch.
template <class T>
using cuda_cli_model = model<cuda_backend, T, huginn_adaptive_arch>;

template <class T>
cuda_cli_model<T> load_on(const cuda_backend& be, const std::string& dir) {
  auto m = cuda_cli_model<T>::load(dir, be);
  std::cerr << "muninn: " << be.device_name() << " (cuda:" << be.device() << "), "
            << (std::is_same_v<T, float> ? "fp32" : "bf16") << ", " << human_bytes(double(m.weight_bytes()))
            << " of weights\n";
  return m;
}

cuda_backend open_device() {
  cuda_require_device();
  return cuda_backend::create(0);
}

}  // namespace

void cuda_require_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    fail("no CUDA device: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
  }
  MUNINN_CHECK(n > 0, "no CUDA device: the driver reports 0 devices");
}

int cuda_forward(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids) {
  const cuda_backend be = open_device();
  if (use_bf16) return forward_with(load_on<bf16>(be, dir), a, ids);
  return forward_with(load_on<float>(be, dir), a, ids);
}

int cuda_generate(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids,
                  const io::tokenizer* tok, std::int64_t max_new) {
  const cuda_backend be = open_device();
  if (use_bf16) return generate_with(load_on<bf16>(be, dir), a, ids, tok, max_new);
  return generate_with(load_on<float>(be, dir), a, ids, tok, max_new);
}

}  // namespace muninn::cli
