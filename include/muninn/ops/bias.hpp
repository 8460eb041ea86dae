#pragma once
/// \file
/// \brief Adds a bias vector to every row (the Linear biases of Llama's attention_bias / mlp_bias).

#include <algorithm>
#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"

namespace muninn {

/// \brief x[r, c] += bias[c] for r < rows, c < cols.
/// \param be   the host backend
/// \param x    [rows, ld], updated in place
/// \param ld   row stride of x in elements (≥ cols)
/// \param bias [cols]
/// \param rows number of rows
/// \param cols number of columns that get a bias
inline void add_bias_rows(const host_backend& be, float* x, std::int64_t ld, const float* bias, std::int64_t rows,
                          std::int64_t cols) {
  MUNINN_CHECK(rows >= 0 && cols >= 0 && ld >= cols, "add_bias_rows: bad shape rows ", rows, ", cols ", cols, ", ld ",
               ld);
  const std::int64_t grain = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(cols, 1));
  be.parallel_for(rows, grain, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t c = 0; c < cols; ++c) x[r * ld + c] += bias[c];
  });
}

}  // namespace muninn
