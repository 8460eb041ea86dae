#pragma once
/// \file
/// \brief Host float ⇄ backend T copies (the compute type may be bf16 on CUDA).

#include <cstdint>
#include <type_traits>
#include <vector>

#include "muninn/core/dtype.hpp"

namespace muninn::engine {

/// \brief Uploads n host floats into backend memory of type T, converting when T is not float.
template <class Backend, class T>
void upload_floats(const Backend& be, T* dst, const float* src, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    be.upload(dst, src, std::size_t(n));
  } else {
    std::vector<T> staging(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < staging.size(); ++i) staging[i] = from_float<T>(src[i]);
    be.upload(dst, staging.data(), staging.size());
  }
}

/// \brief Downloads n values of type T into host floats and waits for the copy.
template <class Backend, class T>
void download_floats(const Backend& be, const T* src, std::int64_t n, float* dst) {
  if constexpr (std::is_same_v<T, float>) {
    be.download(dst, src, std::size_t(n));
  } else {
    std::vector<T> staging(static_cast<std::size_t>(n));
    be.download(staging.data(), src, std::size_t(n));
    for (std::size_t i = 0; i < staging.size(); ++i) dst[i] = to_float(staging[i]);
  }
  be.synchronize();
}

}  // namespace muninn::engine
