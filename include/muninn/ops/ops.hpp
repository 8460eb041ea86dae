#pragma once
/// \file
/// \brief All host ops: GEMM, norms, element-wise, RoPE, attention, embedding, gather/scatter,
/// softmax and row statistics, arg-max and top-k.

#include "muninn/ops/attention.hpp"
#include "muninn/ops/bias.hpp"
#include "muninn/ops/elementwise.hpp"
#include "muninn/ops/embedding.hpp"
#include "muninn/ops/gather.hpp"
#include "muninn/ops/gemm.hpp"
#include "muninn/ops/halting.hpp"
#include "muninn/ops/norm.hpp"
#include "muninn/ops/reduce.hpp"
#include "muninn/ops/rope.hpp"
#include "muninn/ops/softmax.hpp"
#include "muninn/ops/transpose.hpp"
