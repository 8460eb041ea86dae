#pragma once
/// \file
/// \brief Host weight matrices in the storage format a user picks: fp32, bf16 or 8-bit blocks.
///
/// A weight is an [N, K] matrix in torch's Linear layout (row n holds output n's K inputs).
/// Activations stay fp32 whatever the weights are: the GEMM converts weights in registers and
/// accumulates in fp32 (ops/gemm_weight.hpp). The format is a run-time property of the matrix,
/// so a model chooses it when it loads, without compiling another model type.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "muninn/backend/host.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/q8_math.hpp"

namespace muninn {

/// \brief How a weight matrix is stored.
enum class weight_format : std::uint8_t {
  f32,   ///< 4 bytes per weight, as loaded
  bf16,  ///< 2 bytes: the upper half of each fp32 (rounded to nearest even)
  q8,    ///< 1.0625 bytes: blocks of 32 int8 with a bf16 scale (ops/q8_math.hpp)
};

/// \brief The format's name, as `--dtype` / `--quantize` spell it.
inline const char* weight_format_name(weight_format f) {
  switch (f) {
    case weight_format::bf16: return "bf16";
    case weight_format::q8: return "q8";
    default: return "f32";
  }
}

/// \brief Parses "f32" (or "fp32", "float32"), "bf16" (or "bfloat16") or "q8"; an error names `what` and the value.
inline weight_format parse_weight_format(const std::string& s, const char* what = "weight format") {
  if (s == "f32" || s == "fp32" || s == "float32") return weight_format::f32;
  if (s == "bf16" || s == "bfloat16") return weight_format::bf16;
  if (s == "q8") return weight_format::q8;
  fail(what, " '", s, "' is not one of f32, bf16, q8");
}

/// \brief Bytes per weight of a format (q8: values and scales together).
inline double weight_format_bytes(weight_format f) {
  return f == weight_format::f32 ? 4.0 : f == weight_format::bf16 ? 2.0 : 1.0 + 2.0 / q8_block;
}

/// \brief A non-owning view of an [N, K] weight matrix in any format.
///
/// `ld` is the distance between rows in weights (a q8 matrix: a multiple of 32, and q8 rows are
/// padded with zero weights up to it). `scales` (q8 only) holds ld / 32 bf16 scales per row.
struct weight_view {
  weight_format format = weight_format::f32;  ///< storage format
  const void* data = nullptr;                 ///< first weight of row 0 (float, bf16 or int8)
  const bf16* scales = nullptr;               ///< q8: first scale of row 0
  std::int64_t ld = 0;                        ///< row stride, in weights

  /// \brief An fp32 matrix with row stride `ld`.
  static weight_view f32(const float* p, std::int64_t ld) { return {weight_format::f32, p, nullptr, ld}; }

  /// \brief The same rows from column `c` on (a q8 view needs c to start a block).
  weight_view columns(std::int64_t c) const {
    weight_view v = *this;
    switch (format) {
      case weight_format::f32: v.data = static_cast<const float*>(data) + c; break;
      case weight_format::bf16: v.data = static_cast<const bf16*>(data) + c; break;
      case weight_format::q8:
        MUNINN_CHECK(c % q8_block == 0, "q8 weight: a column slice must start at a multiple of ", q8_block,
                     " (asked for column ", c, ")");
        v.data = static_cast<const std::int8_t*>(data) + c;
        v.scales = scales + c / q8_block;
        break;
    }
    return v;
  }
  /// \brief The matrix from row `n` on (a row slice: q8 rows carry their scales along).
  weight_view rows_from(std::int64_t n) const {
    weight_view v = *this;
    switch (format) {
      case weight_format::f32: v.data = static_cast<const float*>(data) + n * ld; break;
      case weight_format::bf16: v.data = static_cast<const bf16*>(data) + n * ld; break;
      case weight_format::q8:
        v.data = static_cast<const std::int8_t*>(data) + n * ld;
        v.scales = scales + n * (ld / q8_block);
        break;
    }
    return v;
  }
  /// \brief Row `n` of an fp32 matrix.
  const float* f32_row(std::int64_t n) const { return static_cast<const float*>(data) + n * ld; }
  /// \brief Row `n` of a bf16 matrix.
  const bf16* bf16_row(std::int64_t n) const { return static_cast<const bf16*>(data) + n * ld; }
  /// \brief Values of row `n` of a q8 matrix.
  const std::int8_t* q8_row(std::int64_t n) const { return static_cast<const std::int8_t*>(data) + n * ld; }
  /// \brief Scales of row `n` of a q8 matrix.
  const bf16* q8_scales(std::int64_t n) const { return scales + n * (ld / q8_block); }
};

/// \brief An owning host weight matrix [N, K] in one format.
class host_weight {
 public:
  host_weight() = default;

  /// \brief Converts fp32 weights [N, K] (row stride `ld`) into `format`; `name` is used in errors.
  ///
  /// bf16 rounds to nearest even; q8 quantizes each block of 32 (ops/q8_math.hpp). A weight that is
  /// NaN or infinite cannot be given a q8 scale and is an error naming the tensor.
  host_weight(const host_backend& be, const float* w, std::int64_t N, std::int64_t K, std::int64_t ld,
              weight_format format, const std::string& name = "weight")
      : format_(format), rows_(N), cols_(K) {
    MUNINN_CHECK(N >= 0 && K >= 0 && ld >= K, name, ": bad weight shape [", N, ", ", K, "] with row stride ", ld);
    switch (format) {
      case weight_format::f32:
        ld_ = K;
        f32_ = host_buffer<float>(std::size_t(N * K));
        be.parallel_for(N, 64, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t n = b; n < e; ++n) std::memcpy(f32_.data() + n * K, w + n * ld, std::size_t(K) * 4);
        });
        break;
      case weight_format::bf16:
        ld_ = K;
        bf16_ = host_buffer<bf16>(std::size_t(N * K));
        be.parallel_for(N, 64, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t n = b; n < e; ++n)
            for (std::int64_t k = 0; k < K; ++k) bf16_[std::size_t(n * K + k)] = to_bf16(w[n * ld + k]);
        });
        break;
      case weight_format::q8: quantize(be, w, ld, name); break;
    }
  }

  /// \brief Storage format.
  weight_format format() const { return format_; }
  /// \brief Rows (outputs).
  std::int64_t rows() const { return rows_; }
  /// \brief Columns (inputs).
  std::int64_t cols() const { return cols_; }
  /// \brief Bytes of weight storage (values and scales).
  std::size_t bytes() const { return f32_.size() * 4 + bf16_.size() * 2 + q_.size() + scales_.size() * 2; }
  /// \brief A view of the whole matrix.
  weight_view view() const {
    switch (format_) {
      case weight_format::bf16: return {format_, bf16_.data(), nullptr, ld_};
      case weight_format::q8: return {format_, q_.data(), scales_.data(), ld_};
      default: return {format_, f32_.data(), nullptr, ld_};
    }
  }

 private:
  void quantize(const host_backend& be, const float* w, std::int64_t ld, const std::string& name) {
    const std::int64_t N = rows_, K = cols_, blocks = (K + q8_block - 1) / q8_block;
    ld_ = blocks * q8_block;
    q_ = host_buffer<std::int8_t>(std::size_t(N * ld_));
    scales_ = host_buffer<bf16>(std::size_t(N * blocks));
    be.parallel_for(N, 16, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t n = b; n < e; ++n)
        for (std::int64_t k = 0; k < K; ++k)
          MUNINN_CHECK(std::isfinite(w[n * ld + k]), name, ": weight [", n, ", ", k, "] is ", w[n * ld + k],
                       ", which 8-bit quantization cannot represent");
      for (std::int64_t n = b; n < e; ++n)
        for (std::int64_t j = 0; j < blocks; ++j) {
          const std::int64_t k0 = j * q8_block;
          scales_[std::size_t(n * blocks + j)] = q8_quantize_block(
              w + n * ld + k0, int(std::min<std::int64_t>(q8_block, K - k0)), q_.data() + n * ld_ + k0);
        }
    });
  }

  weight_format format_ = weight_format::f32;
  std::int64_t rows_ = 0, cols_ = 0, ld_ = 0;
  host_buffer<float> f32_;
  host_buffer<bf16> bf16_;
  host_buffer<std::int8_t> q_;
  host_buffer<bf16> scales_;
};

}  // namespace muninn
