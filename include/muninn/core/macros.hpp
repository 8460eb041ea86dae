#pragma once
/// \file
/// \brief Portability macros shared by host (g++) and CUDA (nvcc) translation units.

#if defined(__CUDACC__)
/// \brief Marks a function callable from host and device code when compiled by nvcc; empty otherwise.
#define MUNINN_HOST_DEVICE __host__ __device__
#else
#define MUNINN_HOST_DEVICE
#endif

/// \brief Forces inlining of small hot helpers (conversions, micro-kernels).
#if defined(_MSC_VER)
#define MUNINN_INLINE __forceinline
#else
#define MUNINN_INLINE inline __attribute__((always_inline))
#endif

/// \brief Library version, kept in sync with the CMake project version.
#define MUNINN_VERSION_MAJOR 0
/// \brief Minor version; see MUNINN_VERSION_MAJOR.
#define MUNINN_VERSION_MINOR 1
/// \brief Patch version; see MUNINN_VERSION_MAJOR.
#define MUNINN_VERSION_PATCH 0
