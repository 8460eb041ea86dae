#pragma once
/// \file
/// \brief Everything of the CUDA backend: the backend and all CUDA ops. Include from .cu files only.

#if !defined(__CUDACC__)
#error "muninn/cuda.cuh is CUDA-only: compile this file with nvcc (host code includes muninn/backend/host.hpp and muninn/ops/ops.hpp)"
#endif

#include "muninn/backend/cuda.cuh"
#include "muninn/ops/cuda/attention.cuh"
#include "muninn/ops/cuda/elementwise.cuh"
#include "muninn/ops/cuda/embedding.cuh"
#include "muninn/ops/cuda/gemm.cuh"
#include "muninn/ops/cuda/norm.cuh"
#include "muninn/ops/cuda/random.cuh"
#include "muninn/ops/cuda/reduce.cuh"
#include "muninn/ops/cuda/rope.cuh"
#include "muninn/ops/cuda/softmax.cuh"
