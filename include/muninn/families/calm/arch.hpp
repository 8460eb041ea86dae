#pragma once
/// \file
/// \brief `calm_arch`: a Continuous Autoregressive Language Model as a policy combination.

#include "muninn/families/calm/chunk_input.hpp"
#include "muninn/families/calm/energy_policy.hpp"
#include "muninn/families/calm/family.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/model/arch.hpp"

namespace muninn {

/// \brief CALM: K tokens → compressor (`input::chunk_compress`) → a Llama stack over chunk
/// positions → RMSNorm → energy head and autoencoder (`head::energy`), one K-token chunk per
/// position. Only slots: `generate` serves it as any arch.
using calm_arch = llama_arch::with<input::chunk_compress, head::energy, family::calm>;

}  // namespace muninn
