#pragma once
// Helpers shared by the test binaries, compiled by g++ and by nvcc: ids from the fixtures' JSON, the
// fixtures' .npy arrays, max |difference| of two logit vectors, random inputs. Model-level checks are in
// test_model_util.hpp, device helpers in test_util_cuda.cuh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"

namespace muninn_test {

/// The Huginn checkpoints written by tools/reference (tests/data/huginn/, with the trailing '/').
inline const std::string data_dir = std::string(MUNINN_TEST_DATA) + "/huginn/";

/// A JSON array of integers as token ids.
inline std::vector<std::int32_t> ids_of(const muninn::io::json& arr) {
  std::vector<std::int32_t> v;
  for (const auto& x : arr.as_array()) v.push_back(std::int32_t(x.as_int()));
  return v;
}

/// max |a[i] - b[i]| in double; a NaN anywhere makes it infinite, so it never passes a bound.
/// Different sizes are a test failure (the common prefix is compared).
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

/// max |a[i]|.
inline double max_abs(const std::vector<float>& a) {
  double m = 0;
  for (float v : a) m = std::max(m, std::fabs(double(v)));
  return m;
}

/// n values uniform in [lo, hi), reproducible from `seed`.
inline std::vector<float> random_vec(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

/// The fp32 array `file` of the Huginn fixture `fixture` (written by tools/reference); a shape other
/// than `shape` is a test failure.
inline std::vector<float> expected(const std::string& fixture, const std::string& file,
                                   std::vector<std::int64_t> shape) {
  auto arr = muninn::io::read_npy_f32(data_dir + fixture + "/" + file);
  EXPECT_EQ(arr.shape, shape) << file;
  return arr.data;
}

}  // namespace muninn_test
