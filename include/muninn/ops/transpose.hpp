#pragma once
/// \file
/// \brief Transposing a batch of matrices (the token-mixing MLP of TRM runs over the sequence
/// axis, so its rows are the columns of the state).

#include <algorithm>
#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"

namespace muninn {

/// \brief y[b][c][r] = x[b][r][c]: each of `batch` row-major [rows, cols] matrices transposed to
/// [cols, rows].
/// \param be    the host backend
/// \param x     input [batch, rows, cols]
/// \param batch number of matrices
/// \param rows  rows of each input matrix
/// \param cols  columns of each input matrix
/// \param y     output [batch, cols, rows]; must not overlap x
inline void transpose_batched(const host_backend& be, const float* x, std::int64_t batch, std::int64_t rows,
                              std::int64_t cols, float* y) {
  MUNINN_CHECK(batch >= 0 && rows >= 0 && cols >= 0, "transpose_batched: negative size batch=", batch,
               " rows=", rows, " cols=", cols);
  constexpr std::int64_t tile = 32;  // a tile of each side stays in L1 while it is read across
  const std::int64_t rt = (rows + tile - 1) / tile, ct = (cols + tile - 1) / tile;
  be.parallel_for(batch * rt * ct, 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t it = b; it < e; ++it) {
      const std::int64_t m = it / (rt * ct), r0 = (it / ct) % rt * tile, c0 = it % ct * tile;
      const float* xm = x + m * rows * cols;
      float* ym = y + m * rows * cols;
      for (std::int64_t c = c0; c < std::min(c0 + tile, cols); ++c)
        for (std::int64_t r = r0; r < std::min(r0 + tile, rows); ++r) ym[c * rows + r] = xm[r * cols + c];
    }
  });
}

}  // namespace muninn
