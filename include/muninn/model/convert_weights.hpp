#pragma once
/// \file
/// \brief Converting a loaded host model's matrices to a bf16 or q8 weight_format, freeing each
/// fp32 matrix as soon as its converted copy exists (so the fp32 copies do not stay resident).

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "muninn/backend/host.hpp"
#include "muninn/engine/layer_dims.hpp"
#include "muninn/nn/layer_weights.hpp"
#include "muninn/ops/weight.hpp"

namespace muninn::detail {

/// \brief Converts host matrices one at a time and keeps count of the memory it changes.
///
/// Matrices are keyed by their fp32 storage: a buffer borrowed from another layer (a
/// Mixture-of-Recursions recursion that shares a stored copy) gets the same converted copy. An
/// owned buffer is always converted afresh: when a model converts layer by layer while it loads,
/// a later layer's buffer may be allocated where a converted and freed one was, and must not be
/// taken for it.
class weight_converter {
 public:
  /// \brief A converter to `format` on `be` (its thread pool converts the rows).
  weight_converter(const host_backend& be, weight_format format) : be_(be), format_(format) {}

  /// \brief `b` [rows, K] converted, and `b` emptied (its fp32 memory freed when it owned it).
  /// An empty `b` gives null.
  std::shared_ptr<const host_weight> take(host_buffer<float>& b, std::int64_t K, const std::string& name) {
    if (!b.size()) return nullptr;
    const std::int64_t rows = std::int64_t(b.size()) / K;
    std::shared_ptr<const host_weight> c = b.owns() ? convert(b.data(), rows, K, name) : copy(b.data(), rows, K, name);
    if (b.owns()) freed_ += b.size() * sizeof(float);
    b = host_buffer<float>();
    return c;
  }
  /// \brief A converted copy of fp32 weights [rows, K] that stay in use (a tied embedding).
  std::shared_ptr<const host_weight> copy(const float* w, std::int64_t rows, std::int64_t K, const std::string& name) {
    auto it = seen_.find(w);
    if (it != seen_.end()) return it->second;
    return convert(w, rows, K, name);
  }
  /// \brief The layer's four projection matrices converted (its token-mixing MLP stays fp32).
  void layer(layer_weights<host_backend, float>& w, const layer_dims& d, const std::string& name) {
    w.converted.wqkv = take(w.wqkv, d.h, name + " qkv");
    w.converted.attn_proj = take(w.attn_proj, d.q_dim(), name + " o_proj");
    w.converted.fc = take(w.fc, d.h, name + " gate_up");
    w.converted.mlp_proj = take(w.mlp_proj, d.inter, name + " down");
  }
  /// \brief Bytes of fp32 storage freed.
  std::size_t freed() const { return freed_; }
  /// \brief Bytes of converted storage made.
  std::size_t added() const { return added_; }

 private:
  std::shared_ptr<const host_weight> convert(const float* w, std::int64_t rows, std::int64_t K, const std::string& name) {
    auto c = std::make_shared<const host_weight>(be_, w, rows, K, K, format_, name);
    added_ += c->bytes();
    seen_[w] = c;
    return c;
  }

  const host_backend& be_;
  weight_format format_;
  std::map<const float*, std::shared_ptr<const host_weight>> seen_;
  std::size_t freed_ = 0, added_ = 0;
};

}  // namespace muninn::detail
