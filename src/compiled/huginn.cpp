// The compiled component: model<host_backend, float, huginn_arch> and its generation, instantiated
// once for every consumer that links muninn::compiled (see muninn/compiled.hpp).

#include "muninn/compiled.hpp"

namespace muninn {
MUNINN_COMPILED_MODEL(, model<host_backend, float, huginn_arch>)
}  // namespace muninn
