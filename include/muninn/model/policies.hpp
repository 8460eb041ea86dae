#pragma once
/// \file
/// \brief Every built-in policy, one header per slot under muninn/policies/.

#include "muninn/policies/block.hpp"
#include "muninn/policies/concepts.hpp"
#include "muninn/policies/halting.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/policies/injection.hpp"
#include "muninn/policies/input.hpp"
#include "muninn/policies/kv_cache.hpp"
#include "muninn/policies/recurrence.hpp"
#include "muninn/policies/rope.hpp"
#include "muninn/policies/router.hpp"
#include "muninn/policies/sharing.hpp"
#include "muninn/policies/state_init.hpp"
