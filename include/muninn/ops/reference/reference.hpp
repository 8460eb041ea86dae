#pragma once
/// \file
/// \brief The reference ops (namespace muninn::ref): plain loops with double accumulation, no
/// backend, no SIMD, no threads. The oracle every backend's op is tested against.
///
/// Each function takes the op's arguments without the backend (host pointers, fp32 data) and
/// computes the documented result as directly as possible, rounding to float once at the end.

#include "muninn/ops/reference/attention.hpp"
#include "muninn/ops/reference/elementwise.hpp"
#include "muninn/ops/reference/gather.hpp"
#include "muninn/ops/reference/gemm.hpp"
#include "muninn/ops/reference/norm.hpp"
#include "muninn/ops/reference/rope.hpp"
#include "muninn/ops/reference/softmax.hpp"
