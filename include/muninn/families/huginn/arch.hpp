#pragma once
/// \file
/// \brief `huginn_arch`: Huginn-0125 as a policy combination, and Huginn's choices as the
/// defaults of `arch<...>` and `model<Backend, T, Arch>`.

#include "muninn/families/huginn/family.hpp"
#include "muninn/model/arch.hpp"
#include "muninn/model/model.hpp"

namespace muninn {

// The defaults of arch's slots are Huginn's, the first family the library ran: a redeclaration
// may add default template arguments, so the family that owns them gives them, and model/ names
// no family. `arch<block::pre_norm, injection::add>` is Huginn with those two slots changed.
template <class Block = block::sandwich, class Injection = injection::concat_linear,
          class StateInit = state_init::truncated_normal, class Sharing = sharing::recurrent_core,
          class Router = router::none, class KvCache = kv_cache::per_layer_slot, class Halting = halting::fixed,
          class Head = head::softmax, class Input = input::scaled_embedding, class Rope = rope::interleaved,
          class Recurrence = recurrence::core_loop, class Family = family::huginn>
struct arch;

/// \brief Huginn-0125 (Geiping et al. 2025): sandwich blocks, concat adapter, random state,
/// recurrent core, fixed depth.
using huginn_arch = arch<>;

/// \brief Huginn with per-token early exit compiled in (criterion chosen per call): what the CLI runs.
using huginn_adaptive_arch = huginn_arch::with<halting::adaptive>;

// `model<host_backend>` is a Huginn model in fp32, as `model<host_backend>::load("huginn-0125/")`
// has always read.
template <class Backend, class T = float, class Arch = huginn_arch>
class model;

}  // namespace muninn
