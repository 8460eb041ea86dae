#pragma once
/// \file
/// \brief Weight storage of a model on its backend, and reading one tensor of a checkpoint into it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/core/config.hpp"
#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/engine/kv_cache.hpp"
#include "muninn/io/safetensors.hpp"
#include "muninn/nn/layer_weights.hpp"
#include "muninn/ops/weight.hpp"

namespace muninn {

/// \brief The parameters of a prelude / core / coda layer stack: what every family's weights have.
///
/// A family's weights type (the FamilyPolicy's `weights_type<Backend, T>`) derives from this one
/// and adds what only its policies read (`huginn_weights::adapter`, `mor_weights::routers`).
template <class Backend, class T>
struct model_weights {
  using buffer = typename Backend::template buffer<T>;  ///< owning storage on the backend
  buffer wte;        ///< [V, h] embedding (also the head when tied)
  buffer lm_head;    ///< [V, h] untied head (empty when tied)
  buffer ln_f;       ///< [h]
  typename Backend::template buffer<float> rope;  ///< [block_size, D/2, 2] cos/sin, always fp32
  /// \brief Prelude layers, run once before the recurrence.
  std::vector<layer_weights<Backend, T>> prelude, core, coda;
  /// \var core
  /// \brief Recurrent core layers, run once per recurrence step.
  /// \var coda
  /// \brief Coda layers, run once after the recurrence.
  std::int64_t parameter_count = 0;  ///< unique parameters (the RoPE table and a duplicate lm_head excluded)
  /// \brief Host only: the output matrix in a bf16 or q8 format (null: fp32). Tied, it is a copy
  /// beside the fp32 embedding the lookups read; untied, it replaces `lm_head`, which is then empty.
  std::shared_ptr<const host_weight> head_converted;
};

/// \brief The layer hook of a loader that takes none: does nothing.
///
/// A FamilyPolicy may offer `load_weights(be, ck, cfg, on_layer)` beside the plain form: it calls
/// `on_layer(group, index, layer)` with each stored layer of the stack right after reading it and
/// before reading the next, so that the model can convert the layer's matrices to a bf16 or q8
/// format while the rest loads (model's constructor with a weight_format): the load then never
/// holds every layer in fp32 at once. The hook may empty the layer's projection buffers.
struct ignore_layers {
  /// \brief Does nothing with layer `index` of `group`.
  template <class Layer>
  void operator()(layer_group, std::size_t, Layer&) const {}
};

namespace detail {

template <class Backend, class T>
typename Backend::template buffer<T> load_tensor(const Backend& be, const io::checkpoint& ck, const std::string& name,
                                                 std::int64_t* counter) {
  const io::tensor_info& info = ck.get(name);
  std::size_t n = 1;
  for (auto d : info.shape) n *= std::size_t(d);
  auto buf = be.template alloc<T>(n);
  if constexpr (std::is_same_v<typename Backend::tag, host_tag>) {
    ck.read_into<T>(name, buf.data(), n);
  } else {
    // Converted on the host straight into the compute type (a bf16 checkpoint stays bf16), then uploaded.
    std::vector<T> staging(n);
    ck.read_into<T>(name, staging.data(), n);
    be.upload(buf.data(), staging.data(), n);
  }
  if (counter) *counter += std::int64_t(n);
  return buf;
}

}  // namespace detail
}  // namespace muninn
