// The front-end library's nvcc translation unit: Huginn-0125's combination (sandwich blocks,
// concat adapter) and Llama on model<cuda_backend, float|bf16>. The host families stay g++
// units with -march=native and the host ops' GCC pragmas; only these CUDA models are
// instantiated here (each CUDA instantiation is a large share of the build).

#include "lm_batch.hpp"
#include "muninn/cuda.cuh"
#include "muninn/families/huginn/family.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/llama/family.hpp"

namespace muninn::frontend::detail {
namespace {

cuda_backend open_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    fail_as(error_kind::usage, "no CUDA device: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
  }
  if (n <= 0) fail_as(error_kind::usage, "no CUDA device: the driver reports 0 devices");
  return cuda_backend::create(0);
}

template <class T, class Arch>
std::unique_ptr<loaded_model> cuda_model(const model_folder& f, lm_extras x) {
  using M = model<cuda_backend, T, Arch>;
  const cuda_backend be = open_device();
  M m = as_kind(error_kind::checkpoint, [&] { return M::load(f.dir, be); });
  x.info.fields.push_back({"device", be.device_name() + " (cuda:" + std::to_string(be.device()) + "), " +
                                         (std::is_same_v<T, float> ? "fp32" : "bf16") + ", " +
                                         human_bytes(double(m.weight_bytes())) + " of weights"});
  return std::make_unique<lm_model<M>>(std::move(m), std::move(x));
}

}  // namespace

std::unique_ptr<loaded_model> load_cuda(lm_kind kind, const model_folder& f, bool bf16, lm_extras x) {
  if (kind == lm_kind::llama)
    return bf16 ? cuda_model<muninn::bf16, llama_arch>(f, std::move(x)) : cuda_model<float, llama_arch>(f, std::move(x));
  return bf16 ? cuda_model<muninn::bf16, huginn_adaptive_arch>(f, std::move(x))
              : cuda_model<float, huginn_adaptive_arch>(f, std::move(x));
}

}  // namespace muninn::frontend::detail
