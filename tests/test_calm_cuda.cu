// CALM on CUDA against the host: the same random checkpoint (written through the released
// layout) loaded on both; backbone hidden states, head latents with the noise fixed, decoded
// chunks, and whole generations (fp32: equal tokens; bf16: hidden states within bf16 rounding).
// Every case reports skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "muninn/cuda.cuh"
#include "muninn/families/calm/random_checkpoint.hpp"
#include "muninn/muninn.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "test_util.hpp"
#include "test_util_cuda.cuh"

using namespace muninn;

namespace {

constexpr double kF32Tol = 1e-4, kBf16Tol = 0.1;

class CudaCalm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!cuda_backend::available()) return;
    be_ = new cuda_backend(cuda_backend::create(0));
    dir_ = (std::filesystem::temp_directory_path() / ("muninn_calm_cuda_" + std::to_string(::getpid()))).string();
    calm_shape s;
    s.vocab = 300;
    s.hidden = 64;
    s.inter = 128;
    s.layers = 2;
    s.heads = 4;
    s.positions = 64;
    s.latent = 16;
    s.noise = 8;
    s.blocks = 2;
    s.ae_hidden = 32;
    s.ae_inter = 64;
    write_random_calm(dir_, s, 3);
  }
  static void TearDownTestSuite() {
    delete be_;
    be_ = nullptr;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (be_ == nullptr) GTEST_SKIP() << "no CUDA device (" << muninn_test::no_cuda_device_reason() << ")";
  }
  static const cuda_backend& gpu() { return *be_; }
  static std::string dir_;

 private:
  static cuda_backend* be_;
};
cuda_backend* CudaCalm::be_ = nullptr;
std::string CudaCalm::dir_;

const std::vector<std::int32_t> kIds = {5, 17, 250, 3, 99, 42, 7, 1, 64, 128, 200, 11};

}  // namespace

TEST_F(CudaCalm, Fp32EqualsHost) {
  auto host = calm_model<host_backend, float>::load(dir_);
  auto dev = calm_model<cuda_backend, float>::load(dir_, "", gpu());
  auto hc = host.make_context(8);
  auto dc = dev.make_context(8);
  const auto hh = host.hidden(hc, kIds), dh = dev.hidden(dc, kIds);
  EXPECT_LE(muninn_test::max_abs_diff(dh, hh), kF32Tol);
  const std::vector<float> noise = calm_noise(9, 0, 0, 3 * 5, host.config().noise_size);
  EXPECT_LE(muninn_test::max_abs_diff(dev.sample_latents(hh, noise, 5), host.sample_latents(hh, noise, 5)), kF32Tol);
  EXPECT_EQ(dev.autoencoder().reconstruct(kIds), host.autoencoder().reconstruct(kIds));
  calm_generate_options o;
  o.max_length = 32;
  o.seed = 3;
  for (const double t : {1.0, 0.5}) {
    o.temperature = t;
    o.num_samples = 32;
    EXPECT_EQ(generate_calm(dev, {5, 17, 250}, o).padded, generate_calm(host, {5, 17, 250}, o).padded) << t;
  }
  o.sampler = calm_sampler::exact;
  EXPECT_EQ(generate_calm(dev, {5, 17, 250}, o).padded, generate_calm(host, {5, 17, 250}, o).padded);
}

TEST_F(CudaCalm, Bf16HiddenStatesWithinRounding) {
  auto host = calm_model<host_backend, float>::load(dir_);
  auto dev = calm_model<cuda_backend, bf16>::load(dir_, "", gpu());
  auto hc = host.make_context(8);
  auto dc = dev.make_context(8);
  EXPECT_LE(muninn_test::max_abs_diff(dev.hidden(dc, kIds), host.hidden(hc, kIds)), kBf16Tol);
}
