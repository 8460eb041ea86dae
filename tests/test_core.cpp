// Core types: dtype conversions against exact values, tensor views, policy composition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "muninn/core/dtype.hpp"
#include "muninn/core/tensor.hpp"
#include "muninn/families/huginn/arch.hpp"

// One namespace per file: the unit-test groups compile several files as one translation unit
// (tests/CMakeLists.txt), where file-local names of two files must not meet.
namespace test_core {

using namespace muninn;

namespace {
// Independent oracle for bf16 rounding: pick the nearer of the two bf16 neighbours in double.
std::uint16_t bf16_oracle(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float flo, fhi;
  std::memcpy(&flo, &lo, 4);
  std::memcpy(&fhi, &hi, 4);
  const double dl = std::fabs(double(f) - double(flo)), dh = std::fabs(double(fhi) - double(f));
  if (dl < dh) return std::uint16_t(lo >> 16);
  if (dh < dl) return std::uint16_t(hi >> 16);
  return ((lo >> 16) & 1u) ? std::uint16_t(hi >> 16) : std::uint16_t(lo >> 16);
}
}  // namespace

TEST(Dtype, Bf16RoundsToNearestEven) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
  for (int i = 0; i < 100000; ++i) {
    float f = dist(rng);
    ASSERT_EQ(to_bf16(f).bits, bf16_oracle(f)) << f;
  }
  EXPECT_EQ(to_float(to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(to_bf16(1.00390625f).bits, 0x3f80);  // exactly halfway: ties to even (down)
  EXPECT_EQ(to_bf16(1.01171875f).bits, 0x3f82);  // halfway, odd low → rounds up
  EXPECT_TRUE(std::isnan(to_float(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(to_float(to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST(Dtype, F16RoundTripsEveryHalf) {
  // Every finite f16 value converts to float and back to the same bits.
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const f16 h{std::uint16_t(b)};
    const float f = to_float(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(to_f16(f).bits, b) << std::hex << b;
  }
  EXPECT_EQ(to_float(f16{0x3c00}), 1.0f);
  EXPECT_EQ(to_float(f16{0x0001}), 5.9604644775390625e-8f);  // smallest subnormal
  EXPECT_EQ(to_float(f16{0x7bff}), 65504.0f);
  EXPECT_TRUE(std::isinf(to_float(to_f16(65520.0f))));      // rounds past the largest finite
  EXPECT_EQ(to_f16(65519.0f).bits, 0x7bff);
}

TEST(Dtype, F16RoundsToNearestEven) {
  // Halfway between 1 and the next f16 (1 + 2^-10): ties to even.
  EXPECT_EQ(to_f16(1.0f + 0.00048828125f).bits, 0x3c00);
  EXPECT_EQ(to_f16(1.0f + 3 * 0.00048828125f).bits, 0x3c02);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-60000.f, 60000.f);
  for (int i = 0; i < 20000; ++i) {
    const float f = dist(rng);
    const float r = to_float(to_f16(f));
    // The rounded value is within half an f16 ulp of f.
    const double ulp = std::ldexp(1.0, std::ilogb(std::fabs(double(r)) + 1e-30) - 10);
    ASSERT_LE(std::fabs(double(r) - double(f)), ulp / 2 + 1e-12) << f;
  }
}

TEST(Dtype, ConvertToHandlesEveryStorage) {
  const float src32[3] = {1.5f, -2.25f, 3.0f};
  const bf16 src16[3] = {to_bf16(1.5f), to_bf16(-2.25f), to_bf16(3.0f)};
  const f16 srch[3] = {to_f16(1.5f), to_f16(-2.25f), to_f16(3.0f)};
  float out[3];
  for (auto [src, t] : {std::pair<const void*, dtype>{src32, dtype::f32}, {src16, dtype::bf16}, {srch, dtype::f16}}) {
    convert_to<float>(out, src, t, 3);
    EXPECT_EQ(out[0], 1.5f);
    EXPECT_EQ(out[1], -2.25f);
    EXPECT_EQ(out[2], 3.0f);
  }
  EXPECT_EQ(dtype_size(dtype::bf16), 2u);
  EXPECT_STREQ(dtype_name(dtype::f16), "F16");
}

TEST(Tensor, ViewsIndexWithStrides) {
  float buf[24];
  for (int i = 0; i < 24; ++i) buf[i] = float(i);
  tensor_view<float> v(buf, {2, 3, 4});
  EXPECT_TRUE(v.contiguous());
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v(1, 2, 3), 23.0f);
  EXPECT_EQ(v.stride(0), 12);
  auto rows = v.slice_rows(1, 2);
  EXPECT_EQ(rows(0, 0, 0), 12.0f);
  // A transposed view of a [3, 4] matrix.
  tensor_view<float> t(buf, {4, 3}, {1, 4, 0, 0, 0});
  EXPECT_FALSE(t.contiguous());
  EXPECT_EQ(t(3, 2), 11.0f);
  EXPECT_THROW(check_shape(v, shape_t{2, 3, 5}, "x"), error);
  try {
    check_shape(v, shape_t{2, 3, 5}, "attn.Wqkv");
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("attn.Wqkv: expected shape [2, 3, 5], got [2, 3, 4]"), std::string::npos);
  }
}

TEST(Arch, HuginnDefaultsAndCustomCombination) {
  static_assert(std::is_same_v<huginn_arch::block_policy, block::sandwich>);
  static_assert(std::is_same_v<huginn_arch::injection_policy, injection::concat_linear>);
  static_assert(std::is_same_v<huginn_arch::state_init_policy, state_init::truncated_normal>);
  using custom = arch<block::pre_norm, injection::add, state_init::zero>;
  static_assert(std::is_same_v<custom::block_policy, block::pre_norm>);
  static_assert(std::is_same_v<custom::sharing_policy, sharing::recurrent_core>);
  // Huginn's cache indexing: prelude 2, core 4, coda 2 layers at r = 32.
  const kv_layout lay{2, 4, 2, 0};
  context_limits lim;
  lim.max_steps = 32;
  EXPECT_EQ(kv_cache::per_layer_slot::num_slots(lay, lim), 132);
  EXPECT_EQ(kv_cache::per_layer_slot::slot_id(lay, lim, layer_group::core, 31, 3), 129);
  EXPECT_EQ(kv_cache::per_layer_slot::slot_id(lay, lim, layer_group::coda, 0, 0), 130);
}

}  // namespace test_core
