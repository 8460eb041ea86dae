#pragma once
/// \file
/// \brief Moving a subset of the active rows out and back: gather the rows a router keeps into a
/// dense stack, run layers on it, and add the result back with a gate (`x += g·f(x)`).

#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/ops/gather.hpp"

namespace muninn::engine {

/// \brief A subset of the rows of a stack, in the order they were picked.
struct row_subset {
  active_rows rows;              ///< the picked rows (sequence, position), with their runs
  std::vector<std::int32_t> idx; ///< row of the full stack each picked row came from
};

/// \brief The rows flagged in `pick` (one flag per row of `from`), in order.
inline row_subset pick_rows(const active_rows& from, const std::vector<std::uint8_t>& pick) {
  MUNINN_CHECK(std::int64_t(pick.size()) == from.size(), "pick_rows: mask of ", pick.size(), " for ", from.size(),
               " rows");
  row_subset s;
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < from.size(); ++i)
    if (pick[std::size_t(i)]) {
      rows.push_back(i);
      s.idx.push_back(std::int32_t(i));
    }
  s.rows = from.gathered(rows);
  return s;
}

/// \brief dst[i] = src[subset.idx[i]] for every picked row; `idx_dev` (backend memory of at
/// least the subset's size) receives the indices.
template <class Backend, class T>
void gather(const Backend& be, const row_subset& subset, const T* src, std::int64_t width, std::int32_t* idx_dev,
            T* dst) {
  const std::int64_t n = std::int64_t(subset.idx.size());
  be.upload(idx_dev, subset.idx.data(), std::size_t(n));
  gather_rows(be, src, width, idx_dev, n, width, dst, width);
}

/// \brief x[subset.idx[i]] += gate[i] · y[i] (gate in backend memory, nullptr for 1): the gated
/// residual that brings the picked rows' update back into the full stack. `idx_dev` as in gather.
template <class Backend, class T>
void scatter_add(const Backend& be, const row_subset& subset, T* x, std::int64_t width, const T* y, const float* gate,
                 std::int32_t* idx_dev) {
  const std::int64_t n = std::int64_t(subset.idx.size());
  be.upload(idx_dev, subset.idx.data(), std::size_t(n));
  scatter_add_gated(be, x, width, idx_dev, y, width, gate, n, width);
}

}  // namespace muninn::engine
