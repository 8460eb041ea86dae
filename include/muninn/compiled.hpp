#pragma once
/// \file
/// \brief The optional compiled component: the common host models, instantiated once in a library
/// (muninn::compiled) instead of in every translation unit that uses them.
///
/// Header-only use is unchanged: nothing here is seen unless `MUNINN_COMPILED` is defined (linking
/// the CMake target muninn::compiled defines it), in which case `muninn/muninn.hpp` includes this
/// header and the instantiations listed below become explicit instantiation declarations
/// (`extern template`). A translation unit that calls them then compiles declarations only; the
/// code comes from the library. Cuts the CPU time of a one-file consumer by about four fifths
/// (docs/performance.md, "Build cost").
///
/// A build that defines `MUNINN_COMPILED` without linking the library fails at link time with
/// undefined references to these functions, never silently; the library is built from the same
/// headers by the same CMake tree, so it cannot drift from them. Only fp32 host models are listed:
/// other combinations are instantiated implicitly, as in header-only use.

#include <cstdint>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/families/huginn/arch.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/model/model.hpp"
#include "muninn/runtime/generate.hpp"

/// \brief The instantiations of one model type `...` (a `model<Backend, T, Arch>` spelled out): the
/// class with all its members, `generate` and `generate_greedy` (both overloads each). `EXTERN` is
/// `extern` for the declarations consumers see, empty for the definitions in the library.
#define MUNINN_COMPILED_MODEL(EXTERN, ...)                                                                  \
  EXTERN template class __VA_ARGS__;                                                                     \
  EXTERN template ::muninn::generate_result generate<__VA_ARGS__>(                                       \
      const __VA_ARGS__&, typename __VA_ARGS__::context_type&, const std::vector<std::int32_t>&,          \
      const ::muninn::generate_options&);                                                                \
  EXTERN template ::muninn::generate_result generate<__VA_ARGS__>(                                       \
      const __VA_ARGS__&, const std::vector<std::int32_t>&, const ::muninn::generate_options&);           \
  EXTERN template std::vector<std::int32_t> generate_greedy<__VA_ARGS__>(                                \
      const __VA_ARGS__&, typename __VA_ARGS__::context_type&, const std::vector<std::int32_t>&,          \
      ::muninn::generate_options);                                                                       \
  EXTERN template std::vector<std::int32_t> generate_greedy<__VA_ARGS__>(                                \
      const __VA_ARGS__&, const std::vector<std::int32_t>&, ::muninn::generate_options);

#if defined(MUNINN_COMPILED)
namespace muninn {
MUNINN_COMPILED_MODEL(extern, model<host_backend, float, huginn_arch>)
MUNINN_COMPILED_MODEL(extern, model<host_backend, float, llama_arch>)
}  // namespace muninn
#endif
