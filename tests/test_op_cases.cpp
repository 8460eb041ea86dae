// The shared op cases (op_cases.hpp) on the host backend, plus host-only checks: the per-element
// maths the CUDA kernels share (muninn/ops/math.hpp), the RoPE frequency scalings against
// Hugging Face's values, and argument errors of the new ops.
//
// Tolerances: see op_cases.hpp (host: 1e-5 relative plus 1e-5 of the largest magnitude). The
// per-element functions are checked against double to a few fp32 ulp (2e-7 relative), the RoPE
// frequencies to 1e-6 relative (fp32 steps as transformers takes them vs exact formulas).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "muninn/ops/math.hpp"
#include "muninn/ops/ops.hpp"
#include "op_cases.hpp"

namespace {

/// The host backend on one thread: every op's serial path.
struct host_serial {
  using backend = muninn::host_backend;
  using storage = float;
  static constexpr op_cases::tolerance tol{1e-5, 1e-5, 1e-5, 1e-9};
  static bool available() { return true; }
  static std::string skip_reason() { return {}; }
  static backend make() { return backend{1}; }
  static std::string name() { return "host_1thread"; }
};

/// The host backend on its default thread count: the parallel splits.
struct host_threads : host_serial {
  static backend make() { return backend{}; }
  static std::string name() { return "host_threads"; }
};

struct config_names {
  template <class C>
  static std::string GetName(int) {
    return C::name();
  }
};

using host_configs = ::testing::Types<host_serial, host_threads>;
INSTANTIATE_TYPED_TEST_SUITE_P(Host, OpCases, host_configs, config_names);

using muninn::host_backend;
using i64 = std::int64_t;
using muninn_test::random_vec;

// ------------------------------------------------------------- per-element maths (math.hpp)

TEST(OpMath, RopeRotateIsAnExactRotationFormula) {
  const auto v = random_vec(400, 1, -3.0f, 3.0f);
  for (std::size_t i = 0; i + 3 < v.size(); i += 4) {
    const double ang = double(v[i + 2]);
    const float c = float(std::cos(ang)), s = float(std::sin(ang));
    float a = v[i], b = v[i + 1];
    muninn::detail::rope_rotate(a, b, c, s);
    const double wa = double(v[i]) * c - double(v[i + 1]) * s, wb = double(v[i + 1]) * c + double(v[i]) * s;
    const double mag = std::fabs(double(v[i])) + std::fabs(double(v[i + 1]));
    EXPECT_NEAR(a, wa, 2e-7 * mag);
    EXPECT_NEAR(b, wb, 2e-7 * mag);
  }
}

TEST(OpMath, SiluMatchesDoubleAndSaturates) {
  for (int i = -2000; i <= 2000; ++i) {
    const float g = float(i) * 0.01f;
    const double want = double(g) / (1.0 + std::exp(-double(g)));
    ASSERT_NEAR(muninn::detail::silu(g), want, 3e-7 * std::fabs(want) + 1e-30) << g;
  }
  EXPECT_EQ(muninn::detail::silu(-200.0f), 0.0f);  // e^200 = inf: −0, not NaN
  EXPECT_EQ(muninn::detail::silu(200.0f), 200.0f);
}

TEST(OpMath, NormAndScatterElements) {
  // A missing weight (1) and bias (0) leave the normalised value bit-identical.
  EXPECT_EQ(muninn::detail::layernorm_element(3.0f, 1.0f, 0.5f, 1.0f, 0.0f), 1.0f);
  EXPECT_EQ(muninn::detail::layernorm_element(3.0f, 1.0f, 0.5f, 2.0f, -1.0f), 1.0f);
  EXPECT_FLOAT_EQ(muninn::detail::rms_inverse(12.0f, 3, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(muninn::detail::rms_inverse(0.0f, 3, 1e-2f), 10.0f);
  EXPECT_EQ(muninn::detail::gated_add(1.0f, 0.5f, 4.0f), 3.0f);
}

TEST(OpMath, TopkKeysOrderByValueThenIndex) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {1.0f, -0.0f, 0.0f, inf, -inf, nan, 1e-45f, -1e-45f, 3.5f, 1.0f, -2.0f, -inf};
  std::vector<std::uint64_t> keys;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    keys.push_back(muninn::detail::topk_key(bits, std::uint32_t(i)));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::uint32_t> order;
  std::vector<float> vals;
  for (auto k : keys) {
    order.push_back(std::uint32_t(k & 0xffffffffu));
    const std::uint32_t b = muninn::detail::topk_key_value_bits(k);
    float f;
    std::memcpy(&f, &b, 4);
    vals.push_back(f);
  }
  // Descending; ties (1.0 at 0 and 9; ±0 at 1 and 2; −inf at 4, 5 (NaN) and 11) by index.
  EXPECT_EQ(order, (std::vector<std::uint32_t>{3, 8, 0, 9, 6, 1, 2, 7, 10, 4, 5, 11}));
  EXPECT_EQ(vals[5], 0.0f);
  EXPECT_FALSE(std::signbit(vals[5])) << "−0 is reported as +0";
  EXPECT_EQ(vals[10], -inf) << "NaN is reported as −inf";
  EXPECT_EQ(vals[4], 1e-45f);
}

TEST(OpMath, KlKeepsTinyDivergences) {
  // b = a + 1e-5 noise: KL ≈ Var(noise)/2 ≈ 1.7e-11, far below fp32 log-probability noise.
  const i64 cols = 20000;
  const auto a = random_vec(std::size_t(cols), 2, -6.0f, 6.0f);
  const auto noise = random_vec(std::size_t(cols), 3, -1e-5f, 1e-5f);
  std::vector<float> b(a);
  for (i64 c = 0; c < cols; ++c) b[std::size_t(c)] += noise[std::size_t(c)];
  float got = 0, want = 0;
  muninn::kl_rows(host_backend{}, a.data(), b.data(), 1, cols, &got);
  muninn::ref::kl_rows(a.data(), b.data(), 1, cols, &want);
  EXPECT_GT(want, 0.0f);
  EXPECT_NEAR(got, want, 1e-3 * want) << "want " << want;
}

// ---------------------------------------------------------------------------- RoPE tables

TEST(RopeTable, DefaultScalingIsTheHuginnTable) {
  const auto old = muninn::make_rope_table(96, 300, 50000.0f);
  const auto now = muninn::make_rope_table(96, 300, 50000.0f, muninn::rope_scaling{});
  EXPECT_EQ(old, now);
}

TEST(RopeTable, Llama3InvFreqMatchesTransformers) {
  // Llama 3.1 8B: head_dim 128, rope_theta 500000, factor 8, low 1, high 4, original 8192.
  // Values from transformers' fp32 steps (modeling_rope_utils._compute_llama3_parameters):
  // index 20 is a high frequency (kept), 30 is in the ramp, 35 and 63 are low (divided by 8).
  const muninn::rope_scaling s{muninn::rope_scaling::kind::llama3, 8.0f, 1.0f, 4.0f, 8192};
  const auto inv = muninn::rope_inv_freq(128, 500000.0f, s);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[1], 0.8146172165870667, 1e-6 * 0.8146172165870667);
  EXPECT_NEAR(inv[20], 0.016560440883040428, 1e-6 * 0.016560440883040428);
  EXPECT_NEAR(inv[30], 0.0013718936825171113, 1e-6 * 0.0013718936825171113);
  EXPECT_NEAR(inv[35], 9.556212899042293e-05, 1e-6 * 9.556212899042293e-05);
  EXPECT_NEAR(inv[63], 3.068925877869333e-07, 1e-6 * 3.068925877869333e-07);
  // Llama 3.2 1B: head_dim 64, factor 32.
  const muninn::rope_scaling s32{muninn::rope_scaling::kind::llama3, 32.0f, 1.0f, 4.0f, 8192};
  const auto inv64 = muninn::rope_inv_freq(64, 500000.0f, s32);
  EXPECT_NEAR(inv64[15], 0.0012905480107292533, 1e-6 * 0.0012905480107292533);
  EXPECT_NEAR(inv64[16], 0.000429556705057621, 1e-6 * 0.000429556705057621);
  EXPECT_NEAR(inv64[17], 9.708286233944818e-05, 1e-6 * 9.708286233944818e-05);
  EXPECT_NEAR(inv64[31], 9.41830720080361e-08, 1e-6 * 9.41830720080361e-08);
}

TEST(RopeTable, EveryScalingMatchesTheReferenceFormulas) {
  using kind = muninn::rope_scaling::kind;
  const muninn::rope_scaling scalings[] = {
      {}, {kind::linear, 4.0f}, {kind::llama3, 8.0f, 1.0f, 4.0f, 8192}, {kind::llama3, 16.0f, 2.0f, 8.0f, 4096}};
  for (const auto& s : scalings)
    for (i64 D : {i64(64), i64(96), i64(128)}) {
      const auto inv = muninn::rope_inv_freq(D, 500000.0f, s);
      const auto want = muninn::ref::rope_inv_freq(D, 500000.0, s);
      for (i64 i = 0; i < D / 2; ++i)
        ASSERT_NEAR(inv[std::size_t(i)], want[std::size_t(i)], 1e-6 * want[std::size_t(i)])
            << "type " << int(s.type) << " D=" << D << " i=" << i;
      // The table: fp32 angles drift from exact ones by about p · 1e-7 rad.
      const i64 P = 2048;
      const auto t = muninn::make_rope_table(D, P, 500000.0f, s);
      const auto tw = muninn::ref::make_rope_table(D, P, 500000.0, s);
      for (std::size_t e = 0; e < t.size(); ++e) {
        const double p = double(e / std::size_t(D));
        ASSERT_NEAR(t[e], tw[e], 2e-7 * p + 1e-6) << "type " << int(s.type) << " D=" << D << " entry " << e;
      }
    }
  // Linear scaling is inv_freq / factor exactly.
  const auto plain = muninn::rope_inv_freq(64, 10000.0f, {});
  const auto lin = muninn::rope_inv_freq(64, 10000.0f, {kind::linear, 2.0f});
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(lin[i], plain[i] / 2.0f);
}

TEST(RopeTable, RejectsBadParameters) {
  using kind = muninn::rope_scaling::kind;
  EXPECT_THROW(muninn::rope_inv_freq(63, 10000.0f, {}), muninn::error);
  EXPECT_THROW(muninn::rope_inv_freq(64, 10000.0f, {kind::linear, 0.0f}), muninn::error);
  EXPECT_THROW(muninn::rope_inv_freq(64, 10000.0f, {kind::llama3, 8.0f, 4.0f, 1.0f, 8192}), muninn::error);
}

// -------------------------------------------------------------- host-only op properties

TEST(HostOps, MaskOverloadCausalIsTheLegacyOpBitForBit) {
  const i64 nq = 9, nkv = 70, H = 4, Hkv = 2, D = 64;
  const auto q = random_vec(std::size_t(nq * H * D), 10), k = random_vec(std::size_t(nkv * Hkv * D), 11);
  const auto v = random_vec(std::size_t(nkv * Hkv * D), 12);
  std::vector<float> a(std::size_t(nq * H * D)), b(a.size());
  muninn::attention(host_backend{}, q.data(), H * D, k.data(), v.data(), Hkv * D, a.data(), H * D, nq, nkv, H, Hkv, D,
                    0.125f);
  muninn::attention(host_backend{}, q.data(), H * D, k.data(), v.data(), Hkv * D, b.data(), H * D, nq, nkv, H, Hkv, D,
                    0.125f, muninn::attn_mask::causal, nullptr, nullptr);
  EXPECT_EQ(a, b);
  // Contiguous positions 61..69 for the queries and 0..69 for the keys are the same mask again.
  std::vector<std::int32_t> qp(nq), kp(nkv);
  std::iota(qp.begin(), qp.end(), std::int32_t(nkv - nq));
  std::iota(kp.begin(), kp.end(), 0);
  muninn::attention(host_backend{}, q.data(), H * D, k.data(), v.data(), Hkv * D, b.data(), H * D, nq, nkv, H, Hkv, D,
                    0.125f, muninn::attn_mask::causal, qp.data(), kp.data());
  EXPECT_TRUE(op_cases::close(b, a, 1e-6, 1e-6, "positions 0..nkv−1"));
}

TEST(HostOps, ArgumentErrors) {
  const host_backend be{};
  std::vector<float> buf(4096);
  std::vector<std::int32_t> pos = {0, -1};
  // Only one of q_pos, k_pos; causal without positions needs nkv >= nq; full does not.
  EXPECT_THROW(muninn::attention(be, buf.data(), 64, buf.data(), buf.data(), 64, buf.data(), 64, 1, 2, 1, 1, 64, 1.0f,
                                 muninn::attn_mask::causal, pos.data(), nullptr),
               muninn::error);
  EXPECT_THROW(muninn::attention(be, buf.data(), 64, buf.data(), buf.data(), 64, buf.data(), 64, 3, 2, 1, 1, 64, 1.0f,
                                 muninn::attn_mask::causal, nullptr, nullptr),
               muninn::error);
  EXPECT_NO_THROW(muninn::attention(be, buf.data(), 64, buf.data(), buf.data(), 64, buf.data(), 64, 3, 2, 1, 1, 64,
                                    1.0f, muninn::attn_mask::full, nullptr, nullptr));
  const auto table = muninn::make_rope_table(64, 4, 10000.0f);
  EXPECT_THROW(muninn::rope_half(be, buf.data(), 2, 64, 1, 64, nullptr, table.data(), pos.data()), muninn::error);
  EXPECT_THROW(muninn::rope_interleaved(be, buf.data(), 2, 64, 1, 64, nullptr, table.data(), pos.data()),
               muninn::error);
  EXPECT_THROW(muninn::rope_half(be, buf.data(), 1, 64, 1, 63, nullptr, table.data(), 0), muninn::error);
  EXPECT_THROW(muninn::gather_rows(be, buf.data(), 64, pos.data(), 2, 64, buf.data() + 1024, 64), muninn::error);
  std::vector<float> vals(8);
  std::vector<std::int32_t> idx(8);
  EXPECT_THROW(muninn::topk_rows(be, buf.data(), 1, 4, 5, vals.data(), idx.data()), muninn::error);
  EXPECT_THROW(muninn::layernorm(be, buf.data(), nullptr, nullptr, buf.data(), 1, 0, 1e-5f), muninn::error);
}

TEST(HostOps, TopKSingleRowIsTopkRows) {
  const auto x = random_vec(1000, 20);
  std::vector<float> v1(10), v2(10);
  std::vector<std::int32_t> i1(10), i2(10);
  muninn::top_k(host_backend{}, x.data(), 1000, 10, v1.data(), i1.data());
  muninn::topk_rows(host_backend{}, x.data(), 1, 1000, 10, v2.data(), i2.data());
  EXPECT_EQ(v1, v2);
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(i1[0], std::int32_t(std::max_element(x.begin(), x.end()) - x.begin()));
}

}  // namespace
