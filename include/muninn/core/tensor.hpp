#pragma once
/// \file
/// \brief Non-owning tensor views with shapes and strides (row-major by default).

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "muninn/core/error.hpp"
#include "muninn/core/macros.hpp"

namespace muninn {

/// \brief Largest rank a view can have; Muninn's tensors are at most [slot, token, head, dim].
inline constexpr int max_rank = 5;

/// \brief A shape: rank plus extents. Value type, cheap to copy.
struct shape_t {
  int rank = 0;                               ///< number of used entries in dims
  std::array<std::int64_t, max_rank> dims{};  ///< extents, outermost first; entries past rank are unused

  shape_t() = default;
  /// \brief Shape from extents, e.g. `{tokens, n_embd}`; throws when the rank exceeds max_rank.
  shape_t(std::initializer_list<std::int64_t> d) {
    MUNINN_CHECK(int(d.size()) <= max_rank, "shape rank ", d.size(), " exceeds ", max_rank);
    for (auto v : d) dims[rank++] = v;
  }
  /// \brief Number of elements (1 for rank 0).
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  /// \brief Extent of dimension i (unchecked).
  std::int64_t operator[](int i) const { return dims[i]; }
  /// \brief Same rank and extents; unused entries are ignored.
  bool operator==(const shape_t& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  /// \brief Negation of operator==.
  bool operator!=(const shape_t& o) const { return !(*this == o); }
  /// \brief "[a, b, c]", used in error messages.
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }
};

/// \brief A typed, non-owning view: pointer, shape, strides in elements.
///
/// Views never allocate; memory belongs to a backend buffer or a mapped file. The pointer may be
/// a device pointer: a view says nothing about where its memory lives, the backend does.
template <class T>
struct tensor_view {
  T* data = nullptr;                             ///< first element (host or device memory)
  shape_t shape;                                 ///< logical extents
  std::array<std::int64_t, max_rank> strides{};  ///< element (not byte) step per dimension

  tensor_view() = default;
  /// \brief Contiguous row-major view.
  tensor_view(T* p, shape_t s) : data(p), shape(s) {
    std::int64_t st = 1;
    for (int i = s.rank - 1; i >= 0; --i) {
      strides[i] = st;
      st *= s.dims[i];
    }
  }
  /// \brief View with explicit strides (in elements).
  tensor_view(T* p, shape_t s, std::array<std::int64_t, max_rank> st) : data(p), shape(s), strides(st) {}

  /// \brief Number of dimensions.
  int rank() const { return shape.rank; }
  /// \brief Extent of dimension i.
  std::int64_t size(int i) const { return shape.dims[i]; }
  /// \brief Step of dimension i, in elements.
  std::int64_t stride(int i) const { return strides[i]; }
  /// \brief Number of elements the view covers.
  std::int64_t numel() const { return shape.numel(); }
  /// \brief True when the elements are dense and row-major.
  bool contiguous() const {
    std::int64_t st = 1;
    for (int i = shape.rank - 1; i >= 0; --i) {
      if (shape.dims[i] != 1 && strides[i] != st) return false;
      st *= shape.dims[i];
    }
    return true;
  }
  /// \brief Element access (host memory only).
  template <class... I>
  T& operator()(I... idx) const {
    std::int64_t off = 0;
    int k = 0;
    ((off += std::int64_t(idx) * strides[k++]), ...);
    return data[off];
  }
  /// \brief Sub-view of rows [begin, end) along dimension 0.
  tensor_view slice_rows(std::int64_t begin, std::int64_t end) const {
    tensor_view v = *this;
    v.data = data + begin * strides[0];
    v.shape.dims[0] = end - begin;
    return v;
  }
  /// \brief The same memory seen as const.
  operator tensor_view<const T>() const { return tensor_view<const T>(data, shape, strides); }
};

/// \brief Checks a view's shape, naming `what` in the error.
template <class T>
void check_shape(const tensor_view<T>& v, const shape_t& expect, const char* what) {
  MUNINN_CHECK(v.shape == expect, what, ": expected shape ", expect.str(), ", got ", v.shape.str());
}

}  // namespace muninn
