// The batch approximation of chunk temperature sampling on the CUDA backend, checked choice by
// choice against the host version (the oracle) on random rows. Without a GPU every case reports
// SKIPPED.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/cuda.cuh"
#include "test_util_cuda.cuh"

namespace {

using muninn::chunk_choice;
using muninn::cuda_backend;

class CudaChunkSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_backend::available()) GTEST_SKIP() << "no CUDA device (" << muninn_test::no_cuda_device_reason() << ")";
    be = cuda_backend::create();
  }
  cuda_backend be;
};

// Rows of ids drawn from a small alphabet, so that rows hold repeated chunks; `alphabet` ids
// centred on 0 (negative ids included).
std::vector<std::int32_t> random_chunks(std::int64_t total, std::int32_t alphabet, std::uint64_t seed) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i)
    ids[std::size_t(i)] =
        std::int32_t(muninn::uniform01_at(seed, std::uint64_t(i)) * alphabet) - alphabet / 2;
  return ids;
}

template <class T>
muninn::cuda_buffer<T> upload(const cuda_backend& be, const std::vector<T>& v) {
  auto b = be.alloc<T>(v.size());
  be.upload(b.data(), v.data(), v.size());
  return b;
}

TEST_F(CudaChunkSampling, DeviceChoicesEqualHostChoices) {
  struct shape {
    std::int64_t rows, samples, k;
    std::int32_t alphabet;
  };
  // 200 x 4 is the reference's N and K; 3000 x 4 does not fit shared memory (keys read from global
  // memory); alphabet 2 with K = 1 gives few distinct chunks, 1000 with K = 5 mostly distinct ones.
  const shape shapes[] = {{33, 200, 4, 3}, {16, 200, 4, 2}, {5, 1, 4, 3}, {9, 7, 1, 2},
                          {12, 300, 5, 1000}, {3, 3000, 4, 3}, {40, 64, 2, 5}};
  const double temperatures[] = {1.0, 0.5, 1.0 / 3, 0.2, 0.1, 1.0 - 1e-12};
  std::uint64_t seed = 1;
  for (const shape& s : shapes) {
    const auto chunks = random_chunks(s.rows * s.samples * s.k, s.alphabet, ++seed);
    std::vector<std::int64_t> positions;
    for (std::int64_t r = 0; r < s.rows; ++r) positions.push_back(7 * r + 3);
    const auto d_chunks = upload(be, chunks);
    const auto d_positions = upload(be, positions);
    auto d_out = be.alloc<std::int32_t>(std::size_t(s.rows * s.k));
    auto d_choices = be.alloc<chunk_choice>(std::size_t(s.rows));
    std::vector<double> uniforms;  // given choice uniforms, as a reference run would pass them
    for (std::int64_t r = 0; r < s.rows; ++r) uniforms.push_back(double((r * 37 + 11) % 100) / 100.0);
    const auto d_uniforms = upload(be, uniforms);
    // Key order from the stream, reference order from the stream and from given uniforms.
    const muninn::chunk_order orders[] = {muninn::chunk_order::key, muninn::chunk_order::reference,
                                          muninn::chunk_order::reference};
    for (int variant = 0; variant < 3; ++variant)
    for (double t : temperatures) {
      const std::string what = "rows " + std::to_string(s.rows) + " samples " + std::to_string(s.samples) + " k " +
                               std::to_string(s.k) + " T " + std::to_string(t) + " variant " + std::to_string(variant);
      muninn::chunk_choice_options host_opt, dev_opt;
      host_opt.order = dev_opt.order = orders[variant];
      if (variant == 2) {
        host_opt.uniforms = uniforms.data();
        dev_opt.uniforms = d_uniforms.data();
      }
      std::vector<std::int32_t> want(std::size_t(s.rows * s.k)), got(want.size());
      std::vector<chunk_choice> want_c(std::size_t(s.rows)), got_c(want_c.size());
      muninn::choose_chunks(muninn::host_backend{}, chunks.data(), s.rows, s.samples, s.k, t, 99, positions.data(),
                            want.data(), want_c.data(), host_opt);
      muninn::choose_chunks(be, d_chunks.data(), s.rows, s.samples, s.k, t, 99, d_positions.data(), d_out.data(),
                            d_choices.data(), dev_opt);
      be.download(got.data(), d_out.data(), got.size());
      be.download(got_c.data(), d_choices.data(), got_c.size());
      EXPECT_EQ(got, want) << what;
      for (std::int64_t r = 0; r < s.rows; ++r) {
        EXPECT_EQ(got_c[std::size_t(r)].sample, want_c[std::size_t(r)].sample) << what << " row " << r;
        EXPECT_EQ(got_c[std::size_t(r)].m, want_c[std::size_t(r)].m) << what << " row " << r;
        EXPECT_EQ(got_c[std::size_t(r)].count, want_c[std::size_t(r)].count) << what << " row " << r;
      }
    }
  }
}

TEST_F(CudaChunkSampling, ChoicesArgumentIsOptional) {
  const auto chunks = random_chunks(4 * 50 * 4, 3, 5);
  const std::vector<std::int64_t> positions = {0, 1, 2, 3};
  const auto d_chunks = upload(be, chunks);
  const auto d_positions = upload(be, positions);
  auto d_out = be.alloc<std::int32_t>(16);
  muninn::choose_chunks(be, d_chunks.data(), 4, 50, 4, 0.5, 3, d_positions.data(), d_out.data());
  std::vector<std::int32_t> got(16), want(16);
  be.download(got.data(), d_out.data(), got.size());
  muninn::choose_chunks(muninn::host_backend{}, chunks.data(), 4, 50, 4, 0.5, 3, positions.data(), want.data());
  EXPECT_EQ(got, want);
}

TEST_F(CudaChunkSampling, ErrorsNameTheBadValue) {
  auto d = be.alloc<std::int32_t>(16);
  auto p = be.alloc<std::int64_t>(1);
  try {
    muninn::choose_chunks(be, d.data(), 1, 4, 4, 0.7, 1, p.data(), d.data());
    ADD_FAILURE() << "T = 0.7 accepted";
  } catch (const muninn::error& e) {
    EXPECT_NE(std::string(e.what()).find("got T = 0.7"), std::string::npos) << e.what();
  }
  try {
    muninn::choose_chunks(be, d.data(), 1, muninn::cuda_chunk_choice_max_samples + 1, 1, 0.5, 1, p.data(), d.data());
    ADD_FAILURE() << "too many samples accepted";
  } catch (const muninn::error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the per-row limit"), std::string::npos) << e.what();
  }
}

}  // namespace
