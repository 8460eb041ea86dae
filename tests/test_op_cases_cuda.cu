// The shared op cases (op_cases.hpp) on the CUDA backend for float and bf16, plus the masked
// attention forced onto each kernel path. Without a GPU (or driver) every case reports SKIPPED.
//
// Tolerances: see op_cases.hpp (fp32: 1e-4 relative plus 1e-4 of the largest magnitude; bf16:
// 2e-2 and 2e-2; row statistics 1e-4 relative plus 1e-7).

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/ops/ops.hpp"
#include "op_cases.hpp"
#include "test_util_cuda.cuh"

namespace {

/// The CUDA backend with storage type T.
template <class T>
struct cuda_config {
  using backend = muninn::cuda_backend;
  using storage = T;
  static constexpr op_cases::tolerance tol = std::is_same_v<T, float> ? op_cases::tolerance{1e-4, 1e-4, 1e-4, 1e-7}
                                                                      : op_cases::tolerance{2e-2, 2e-2, 1e-4, 1e-7};
  static bool available() { return muninn::cuda_backend::available(); }
  static std::string skip_reason() { return "no CUDA device (" + muninn_test::no_cuda_device_reason() + ")"; }
  static backend make() { return muninn::cuda_backend::create(); }
  static std::string name() { return std::is_same_v<T, float> ? "cuda_f32" : "cuda_bf16"; }
};

struct config_names {
  template <class C>
  static std::string GetName(int) {
    return C::name();
  }
};

using cuda_configs = ::testing::Types<cuda_config<float>, cuda_config<muninn::bf16>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, OpCases, cuda_configs, config_names);

// The public masked attention picks its kernel path by size; here every path runs every mask.
template <class T>
class CudaMaskedAttentionPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!muninn::cuda_backend::available())
      GTEST_SKIP() << "no CUDA device (" << muninn_test::no_cuda_device_reason() << ")";
    h_.emplace(op_cases::harness<cuda_config<T>>{muninn::cuda_backend::create(), cuda_config<T>::tol});
  }
  const op_cases::harness<cuda_config<T>>& h() const { return *h_; }

 private:
  std::optional<op_cases::harness<cuda_config<T>>> h_;
};
using storage_types = ::testing::Types<float, muninn::bf16>;
TYPED_TEST_SUITE(CudaMaskedAttentionPaths, storage_types);

TYPED_TEST(CudaMaskedAttentionPaths, EveryPathEveryMask) {
  using muninn::attn_mask;
  using muninn::detail::gpu::attention_path;
  const auto& h = this->h();
  const std::int64_t nq = 20, nkv = 150, H = 4, Hkv = 2;
  auto qp = op_cases::subset_positions(nq, 400, 1), kp = op_cases::subset_positions(nkv, 400, 2);
  qp[3] = -1;  // sees nothing
  for (std::int64_t D : {std::int64_t(64), std::int64_t(96), std::int64_t(128)}) {
    const std::int64_t ldq = H * D, ldkv = Hkv * D;
    const auto q = h.random(std::size_t(nq * ldq), 3, -2.0f, 2.0f), k = h.random(std::size_t(nkv * ldkv), 4, -2.0f, 2.0f);
    const auto v = h.random(std::size_t(nkv * ldkv), 5);
    auto dq = h.put(q), dk = h.put(k), dv = h.put(v);
    auto dqp = h.put_raw(qp), dkp = h.put_raw(kp);
    for (int m = 0; m < 3; ++m) {  // causal by index, full, causal by position
      const attn_mask mask = m == 1 ? attn_mask::full : attn_mask::causal;
      const bool pos = m == 2;
      std::vector<float> want(std::size_t(nq * ldq), 0.0f);
      muninn::ref::attention(q.data(), ldq, k.data(), v.data(), ldkv, want.data(), ldq, nq, nkv, H, Hkv, D, 0.125f,
                             mask, pos ? qp.data() : nullptr, pos ? kp.data() : nullptr);
      for (auto path : {attention_path::prefill, attention_path::decode}) {
        auto dout = h.put(std::vector<float>(want.size(), 7.0f));
        muninn::detail::gpu::attention_dispatch_masked(h.be, dq.data(), ldq, dk.data(), dv.data(), ldkv, dout.data(),
                                                       ldq, nq, nkv, H, Hkv, D, 0.125f, mask,
                                                       pos ? dqp.data() : nullptr, pos ? dkp.data() : nullptr, path);
        EXPECT_TRUE(op_cases::close(h.get(dout.data(), want.size()), want, h.tol,
                                    "D=" + std::to_string(D) + " mask " + std::to_string(m) + " path " +
                                        std::to_string(int(path))));
      }
    }
  }
}

}  // namespace
