#pragma once
/// \file
/// \brief Everything of the CUDA backend: the backend and all CUDA ops. Include from .cu files only.
///
/// For whole models include `muninn/muninn.hpp` as well (in either order): `model<cuda_backend, T>`
/// with T = float or bf16 finds these ops by argument-dependent lookup when it is instantiated.
/// ```
/// #include "muninn/muninn.hpp"
/// #include "muninn/cuda.cuh"
/// auto be = muninn::cuda_backend::create(0);
/// auto m = muninn::model<muninn::cuda_backend, muninn::bf16>::load("path/to/huginn", be);
/// ```

#if !defined(__CUDACC__)
#error "muninn/cuda.cuh is CUDA-only: compile this file with nvcc (host code includes muninn/backend/host.hpp and muninn/ops/ops.hpp)"
#endif

#include "muninn/backend/cuda.cuh"
#include "muninn/ops/cuda/attention.cuh"
#include "muninn/ops/cuda/bias.cuh"
#include "muninn/ops/cuda/elementwise.cuh"
#include "muninn/ops/cuda/embedding.cuh"
#include "muninn/ops/cuda/gather.cuh"
#include "muninn/ops/cuda/gemm.cuh"
#include "muninn/ops/cuda/halting.cuh"
#include "muninn/ops/cuda/norm.cuh"
#include "muninn/ops/cuda/random.cuh"
#include "muninn/ops/cuda/reduce.cuh"
#include "muninn/ops/cuda/rope.cuh"
#include "muninn/ops/cuda/softmax.cuh"
#include "muninn/ops/cuda/transpose.cuh"
#include "muninn/ops/cuda/chunk_choice.cuh"
