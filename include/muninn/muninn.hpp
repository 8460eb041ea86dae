#pragma once
/// \file
/// \brief Umbrella header of the host library: include this one to get everything that g++ alone compiles.
///
/// CUDA users include `muninn/cuda.cuh` (from nvcc-compiled translation units) in addition.

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/core/tensor.hpp"
#include "muninn/families/huginn/arch.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/model/model.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/runtime/chunk_sampling.hpp"
#include "muninn/runtime/generate.hpp"
#include "muninn/runtime/parallel_sampler.hpp"

#if defined(MUNINN_COMPILED)  // opted into the compiled component (muninn::compiled)
#include "muninn/compiled.hpp"
#endif
