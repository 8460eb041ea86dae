// `--device cuda` of the muninn CLI: forward and generate on model<cuda_backend, float|bf16>.
//
// The CLI's only nvcc translation unit. main.cpp stays a g++ unit, so the host model keeps
// -march=native and the GCC loop pragmas of the host ops; only the CUDA models the CLI
// offers are instantiated here (each instantiation is a large share of the compile time).

#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "commands.hpp"
#include "families.hpp"
#include "muninn/cuda.cuh"

namespace muninn::cli {
namespace {

/// Prints which device and how much weight memory a loaded model uses.
template <class Model>
const Model& announce(const cuda_backend& be, const Model& m) {
  std::cerr << "muninn: " << be.device_name() << " (cuda:" << be.device() << "), "
            << (std::is_same_v<typename Model::value_type, float> ? "fp32" : "bf16") << ", "
            << human_bytes(double(m.weight_bytes())) << " of weights\n";
  return m;
}

/// Runs `f` on the CUDA model for `dir`. Two combinations are compiled for the GPU (each CUDA
/// instantiation is a large share of the build): Huginn-0125's and Llama's.
template <class T, class F>
int with_cuda_model(const cuda_backend& be, const std::string& dir, F&& f) {
  const model_kind kind = detect_model(dir);
  if (kind == model_kind::llama) return f(announce(be, model<cuda_backend, T, llama_arch>::load(dir, be)));
  MUNINN_CHECK(kind == model_kind::huginn, "--device cuda runs huginn_raven checkpoints with sandwich blocks and the "
               "concat adapter, and llama checkpoints; run this one with --device cpu");
  return f(announce(be, model<cuda_backend, T, huginn_cli_arch>::load(dir, be)));
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
  const auto run = [&](const auto& m) { return forward_with(m, a, ids); };
  return use_bf16 ? with_cuda_model<bf16>(be, dir, run) : with_cuda_model<float>(be, dir, run);
}

int cuda_generate(const std::string& dir, bool use_bf16, const args& a, const std::vector<std::int32_t>& ids,
                  const io::tokenizer* tok, std::int64_t max_new) {
  const cuda_backend be = open_device();
  const auto run = [&](const auto& m) { return generate_with(m, a, ids, tok, max_new); };
  return use_bf16 ? with_cuda_model<bf16>(be, dir, run) : with_cuda_model<float>(be, dir, run);
}

}  // namespace muninn::cli
