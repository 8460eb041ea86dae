#pragma once
/// \file
/// \brief Row reductions on the host: arg-max per row and top-k per row (the host twins of
/// muninn/ops/cuda/reduce.cuh).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/math.hpp"
#include "muninn/ops/softmax.hpp"

namespace muninn {
namespace detail {

/// \brief The k smallest top-k keys of row x[0, n) in ascending order (largest values first).
inline void topk_keys(const float* x, std::int64_t n, std::int64_t k, std::vector<std::uint64_t>& keys) {
  keys.resize(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    keys[std::size_t(i)] = topk_key(bits, std::uint32_t(i));
  }
  std::partial_sort(keys.begin(), keys.begin() + k, keys.end());
}

/// \brief Writes the first k sorted keys as values and indices.
inline void topk_decode(const std::vector<std::uint64_t>& keys, std::int64_t k, float* vals, std::int32_t* idx) {
  for (std::int64_t i = 0; i < k; ++i) {
    const std::uint32_t bits = topk_key_value_bits(keys[std::size_t(i)]);
    std::memcpy(vals + i, &bits, sizeof bits);
    idx[i] = std::int32_t(keys[std::size_t(i)] & 0xffffffffu);
  }
}

}  // namespace detail

/// \brief out[r] = index of the largest element of row r of x; the first one when several are
/// equal; NaNs are ignored (an all-NaN row gives 0).
/// \param be   the host backend
/// \param x    data [rows, cols], contiguous
/// \param rows number of rows
/// \param cols elements per row, 1 <= cols < 2^31
/// \param out  index per row [rows]
inline void argmax_rows(const host_backend& be, const float* x, std::int64_t rows, std::int64_t cols,
                        std::int32_t* out) {
  MUNINN_CHECK(rows >= 0 && cols > 0 && cols <= std::int64_t(INT32_MAX), "argmax_rows: bad shape rows=", rows,
               " cols=", cols);
  be.parallel_for(rows, std::max<std::int64_t>(1, 65536 / cols), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) out[r] = std::int32_t(argmax(be, x + r * cols, cols));
  });
}

/// \brief The k largest elements of each row of x in descending order, with their indices.
///
/// Equal values keep ascending index order, −0.0 and +0.0 count as equal (reported as +0.0), and
/// a NaN ranks as −inf (reported as −inf): the same order as the CUDA op, which sorts the same
/// keys (detail::topk_key).
/// \param be   the host backend
/// \param x    data [rows, cols], contiguous
/// \param rows number of rows
/// \param cols elements per row, 1 <= cols < 2^31
/// \param k    how many per row, 1 <= k <= cols
/// \param vals output [rows, k]: the values, largest first
/// \param idx  output [rows, k]: their column indices
inline void topk_rows(const host_backend& be, const float* x, std::int64_t rows, std::int64_t cols, std::int64_t k,
                      float* vals, std::int32_t* idx) {
  MUNINN_CHECK(rows >= 0 && cols > 0 && cols <= std::int64_t(INT32_MAX), "topk_rows: bad shape rows=", rows,
               " cols=", cols);
  MUNINN_CHECK(k > 0 && k <= cols, "topk_rows: k=", k, " outside [1, cols=", cols, "]");
  be.parallel_for(rows, std::max<std::int64_t>(1, 16384 / cols), [&](std::int64_t b, std::int64_t e) {
    std::vector<std::uint64_t> keys;
    for (std::int64_t r = b; r < e; ++r) {
      detail::topk_keys(x + r * cols, cols, k, keys);
      detail::topk_decode(keys, k, vals + r * k, idx + r * k);
    }
  });
}

/// \brief The k largest elements of x[0, n) in descending order, with their indices: one row of
/// topk_rows (the host twin of the CUDA top_k).
/// \param be   the host backend
/// \param x    data [n]
/// \param n    number of elements, 1 <= n < 2^31
/// \param k    how many to return, 1 <= k <= n
/// \param vals output [k]: the values, largest first
/// \param idx  output [k]: their indices in x
inline void top_k(const host_backend& be, const float* x, std::int64_t n, std::int64_t k, float* vals,
                  std::int32_t* idx) {
  topk_rows(be, x, 1, n, k, vals, idx);
}

}  // namespace muninn
