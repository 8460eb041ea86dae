#pragma once
/// \file
/// \brief Active rows: the (sequence, absolute position) pairs a call is working on, as runs of
/// consecutive positions, with keep-by-mask and gather on the host mirror.

#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::engine {

/// \brief Consecutive rows of one sequence at consecutive positions: what attention and RoPE
/// work on at once.
struct row_run {
  std::int32_t seq = 0;   ///< the sequence (index into the call's list of sequences)
  std::int64_t row0 = 0;  ///< first row in the stack
  std::int64_t n = 0;     ///< rows
  std::int64_t pos0 = 0;  ///< absolute position of the first row in its sequence
};

/// \brief The rows of a stacked call: row i is token `pos(i)` of sequence `seq(i)`.
///
/// Rows may be contiguous (prefill of one sequence, one decode token per sequence) or ragged
/// (a router keeps a subset of each sequence's tokens). The mirror lives on the host; backend
/// buffers of the same row order are moved with `compact_rows` / gather ops.
class active_rows {
 public:
  /// \brief Appends `n` rows of sequence `seq` at positions pos0 … pos0 + n − 1.
  void append(std::int32_t seq, std::int64_t pos0, std::int64_t n) {
    MUNINN_CHECK(n >= 0 && pos0 >= 0, "active_rows: bad run (pos0 ", pos0, ", n ", n, ")");
    for (std::int64_t i = 0; i < n; ++i) {
      seq_.push_back(seq);
      pos_.push_back(pos0 + i);
    }
    rebuild_runs();
  }
  /// \brief Rows in the stack.
  std::int64_t size() const { return std::int64_t(seq_.size()); }
  /// \brief True when no row is left.
  bool empty() const { return seq_.empty(); }
  /// \brief Sequence of row i.
  std::int32_t seq(std::int64_t i) const { return seq_[std::size_t(i)]; }
  /// \brief Absolute position of row i.
  std::int64_t pos(std::int64_t i) const { return pos_[std::size_t(i)]; }
  /// \brief Maximal runs of consecutive positions of one sequence, in row order.
  const std::vector<row_run>& runs() const { return runs_; }

  /// \brief The rows whose mask entry is non-zero, in order (keep-by-mask).
  active_rows kept(const std::vector<std::uint8_t>& keep) const {
    MUNINN_CHECK(std::int64_t(keep.size()) == size(), "active_rows: mask of ", keep.size(), " for ", size(), " rows");
    std::vector<std::int64_t> idx;
    for (std::int64_t i = 0; i < size(); ++i)
      if (keep[std::size_t(i)]) idx.push_back(i);
    return gathered(idx);
  }
  /// \brief Rows idx[0], idx[1], … (gather).
  active_rows gathered(const std::vector<std::int64_t>& idx) const {
    active_rows out;
    for (std::int64_t i : idx) {
      MUNINN_CHECK(i >= 0 && i < size(), "active_rows: row ", i, " outside [0, ", size(), ")");
      out.seq_.push_back(seq_[std::size_t(i)]);
      out.pos_.push_back(pos_[std::size_t(i)]);
    }
    out.rebuild_runs();
    return out;
  }

 private:
  void rebuild_runs() {
    runs_.clear();
    for (std::int64_t i = 0; i < size(); ++i) {
      const bool extends = !runs_.empty() && runs_.back().seq == seq(i) && runs_.back().pos0 + runs_.back().n == pos(i);
      if (extends)
        ++runs_.back().n;
      else
        runs_.push_back(row_run{seq(i), i, 1, pos(i)});
    }
  }

  std::vector<std::int32_t> seq_;
  std::vector<std::int64_t> pos_;
  std::vector<row_run> runs_;
};

/// \brief Uploads each row's position to `dst` (backend memory, [rows.size()]): what attention
/// masks by when a cache's keys are not the positions 0 … n−1.
template <class Backend>
void upload_positions(const Backend& be, const active_rows& rows, std::int32_t* dst) {
  std::vector<std::int32_t> pos(static_cast<std::size_t>(rows.size()));
  for (std::int64_t i = 0; i < rows.size(); ++i) pos[std::size_t(i)] = std::int32_t(rows.pos(i));
  be.upload(dst, pos.data(), pos.size());
}

/// \brief Moves the rows kept by `keep` (one flag per row of `rows`) to the front of `buf`
/// ([rows, width]), in order, through `tmp` (at least as large). Consecutive kept rows move as one block.
template <class Backend, class T>
void compact_rows(const Backend& be, T* buf, std::int64_t width, const std::vector<std::uint8_t>& keep, T* tmp) {
  std::int64_t out = 0;
  const std::int64_t n = std::int64_t(keep.size());
  for (std::int64_t i = 0; i < n;) {
    if (!keep[std::size_t(i)]) {
      ++i;
      continue;
    }
    std::int64_t j = i;
    while (j < n && keep[std::size_t(j)]) ++j;
    be.copy(tmp + out * width, buf + i * width, std::size_t((j - i) * width));
    out += j - i;
    i = j;
  }
  be.copy(buf, tmp, std::size_t(out * width));
}

}  // namespace muninn::engine
