#pragma once
/// \file
/// \brief Likelihood-free temperature sampling of K-token chunks: the exact sampler
/// (ops/chunk_exact.hpp) and the batch approximation (ops/chunk_choice.hpp). The samplers sit on
/// the ops floor so that a chunk-emitting head (CALM's `head::energy`) runs them; this header
/// keeps the runtime's name for them.

#include "muninn/ops/chunk_exact.hpp"
