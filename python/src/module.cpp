// The extension module muninn._muninn; the package muninn re-exports it (python/muninn/__init__.py).

#include <nanobind/stl/string.h>

#include "binding.hpp"

#ifndef MUNINN_VERSION
#define MUNINN_VERSION "unknown"
#endif

NB_MODULE(_muninn, m) {
  using namespace muninn::python;
  m.doc() = "Muninn's C++ engine: load a checkpoint of any family, forward, generate, score, solve.";
  m.attr("__version__") = MUNINN_VERSION;
#if defined(MUNINN_FRONTEND_CUDA)
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  bind_errors(m);
  bind_model(m);
}
