#pragma once
/// \file
/// \brief `trm_pass`: one supervision step of a TRM / HRM model — the verbs
/// `recurrence::two_stream` composes (inject, run a net, emit) over a batch of samples — and the
/// scratch rows it runs in (`trm_workspace`).
///
/// A batch of n samples is n·S stacked rows (S = prefix + grid), one run of positions 0 … S−1 per
/// sample: the projections and MLPs are one GEMM over all rows; attention and RoPE run per
/// sample, which sees only its own rows (`kv_cache::none`, a full mask).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/engine/kv_cache.hpp"
#include "muninn/engine/kv_views.hpp"
#include "muninn/engine/layer_dims.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/trm/config.hpp"
#include "muninn/model/taps.hpp"
#include "muninn/nn/layer.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/head.hpp"
#include "muninn/policies/injection.hpp"

namespace muninn {

/// \brief Scratch rows of one batch, sized for up to `capacity` samples and reused across steps.
template <class Backend, class T>
struct trm_workspace {
  using buffer = typename Backend::template buffer<T>;  ///< storage on the backend
  std::int64_t capacity = 0;  ///< samples the buffers hold
  buffer normed;   ///< [n·S, D]: the transposed state of the token-mixing MLP (mlp_t)
  buffer qkv;      ///< [n·S, 3D]: attention queries, keys and values of a row side by side (one fused GEMM)
  buffer attn;     ///< [n·S, D]: attention output before its projection
  buffer proj;     ///< [n·S, D]: a sublayer's output before its residual and norm
  buffer gu;       ///< [n·S, 2I], or [n·D, 2·I_S] for mlp_t if larger
  buffer act;      ///< [n·S, I], or [n·D, I_S] if larger
  buffer inj;      ///< [n·S, D]: z_H + x
  buffer logits;   ///< [n·S, V]
  buffer q_halt;   ///< [n, 2]: q_halt, q_continue
  engine::active_rows samples;  ///< one run per sample: positions 0 … S−1 (grown with the batch)

  /// \brief Grows the buffers to hold `n` samples of config `c` (never shrinks).
  void reserve(const Backend& be, const trm_config& c, std::int64_t n) {
    if (n <= capacity) return;
    const auto S = std::size_t(c.total_len()), D = std::size_t(c.hidden_size), N = std::size_t(n);
    const auto I = std::size_t(c.swiglu_inter(c.hidden_size));
    const auto Is = c.mlp_t ? std::size_t(c.swiglu_inter(c.total_len())) : 0;
    if (!c.mlp_t) {
      qkv = be.template alloc<T>(N * S * 3 * D);
      attn = be.template alloc<T>(N * S * D);
    } else {
      normed = be.template alloc<T>(N * D * S);
    }
    proj = be.template alloc<T>(N * S * D);
    gu = be.template alloc<T>(std::max(N * S * 2 * I, N * D * 2 * Is));
    act = be.template alloc<T>(std::max(N * S * I, N * D * Is));
    inj = be.template alloc<T>(N * S * D);
    logits = be.template alloc<T>(N * S * std::size_t(c.vocab_size));
    q_halt = be.template alloc<T>(N * 2);
    capacity = n;
  }
  /// \brief The stacked rows of n samples: sample b is sequence b at positions 0 … S−1.
  const engine::active_rows& rows(std::int64_t n, std::int64_t S) {
    if (samples.size() != n * S) {
      samples = engine::active_rows{};
      for (std::int64_t b = 0; b < n; ++b) samples.append(std::int32_t(b), 0, S);
    }
    return samples;
  }
  /// \brief The scratch of a layer call.
  layer_scratch<T> scratch() {
    return {normed.data(), nullptr, attn.data(), proj.data(), gu.data(), act.data(), nullptr, nullptr, qkv.data()};
  }
};

/// \brief One supervision step of `Model` (a `model<Backend, T, Arch>` of the TRM family) on n
/// samples whose streams z_H, z_L and input x live on the backend: the Arch's RecurrencePolicy
/// runs, the heads leave logits [n·S, V] and q [n, 2] in the workspace.
template <class Model>
class trm_pass {
 public:
  using backend_type = typename Model::backend_type;  ///< the backend
  using value_type = typename Model::value_type;      ///< compute type
  using arch_type = typename Model::arch_type;        ///< the policies

  /// \brief Binds the streams of n samples (each [n·S, D]).
  trm_pass(const Model& m, trm_workspace<backend_type, value_type>& ws, value_type* zH, value_type* zL,
           const value_type* x, std::int64_t n)
      : m_(m), be_(m.backend()), ws_(ws), zH_(zH), zL_(zL), x_(x), n_(n),
        rows_(ws.rows(n, m.config().total_len())) {}

  /// \brief Hands the streams after each update to `taps` (z_L.cycle.T.J, z_H.cycle.T) as
  /// supervision step `step`, row block b belonging to batch sample `samples[b]`. Without a
  /// callback nothing is built or copied.
  void set_taps(const tap_options* taps, std::int64_t step, const std::vector<std::int64_t>* samples) {
    taps_ = taps && taps->on_tap ? taps : nullptr;
    step_ = step;
    samples_ = samples;
  }

  /// \brief Runs the Arch's schedule.
  void run() { arch_type::recurrence_policy::run(*this); }

  /// \brief The model this step runs.
  const Model& model() const { return m_; }
  /// \brief z_H, the answer stream y.
  value_type* high() { return zH_; }
  /// \brief z_L, the latent stream z.
  value_type* low() { return zL_; }
  /// \brief x, the input embeddings (the same at every step).
  const value_type* input() const { return x_; }
  /// \brief T: outer cycles per supervision step.
  std::int64_t high_cycles() const { return m_.config().H_cycles; }
  /// \brief n: z_L updates per outer cycle.
  std::int64_t low_cycles() const { return m_.config().L_cycles; }

  /// \brief state = state + a (+ b): the InjectionPolicy adds the injection before a net's layers.
  void inject(value_type* state, const value_type* a, const value_type* b = nullptr) {
    const std::int64_t rows = rows_.size(), h = m_.dims().h;
    if (b) {
      add(be_, a, b, ws_.inj.data(), rows * h);
      a = ws_.inj.data();
    }
    value_type* spare = nullptr;
    arch_type::injection_policy::apply(injection_args<backend_type, value_type>{be_, rows, h, a, nullptr, nullptr},
                                       state, spare);
  }

  /// \brief Every layer of `group` in place on `state`, each sample attending to its own rows.
  void run_layers(layer_group group, value_type* state) {
    kv_views<value_type> kv;  // no cache: each sample attends to its own rows, with no mask
    kv.mask = attn_mask::full;
    const float* rope = m_.config().pos_encodings == "rope" ? m_.weights().rope.data() : nullptr;
    const layer_scratch<value_type> s = ws_.scratch();
    const std::size_t n_layers = m_.layers(group).size();
    for (std::size_t j = 0; j < n_layers; ++j)
      nn::run_layer<typename arch_type::block_policy, typename arch_type::rope_policy>(
          be_, m_.layer_at(group, 0, std::int64_t(j)), m_.dims(), state, rows_, kv, rope, s);
  }

  /// \brief After z_L's update j of outer cycle t: the z_L.cycle.t.j tap.
  void tap_low(std::int64_t t, std::int64_t j) {
    if (taps_) tap_stream("z_L.cycle." + std::to_string(t) + "." + std::to_string(j), zL_);
  }
  /// \brief After z_H's update in outer cycle t: the z_H.cycle.t tap.
  void tap_high(std::int64_t t) {
    if (taps_) tap_stream("z_H.cycle." + std::to_string(t), zH_);
  }

  /// \brief The heads on z_H: logits [n·S, V] for every position (the caller drops the prefix)
  /// and q [n, 2] from position 0, in the workspace.
  void emit(value_type* zH) {
    using Head = typename arch_type::head_policy;
    const auto& c = m_.config();
    const std::int64_t S = c.total_len(), D = m_.dims().h, V = c.vocab_size;
    const head_args<backend_type, value_type> a{be_, zH, n_ * S, D, V, nullptr, c.norm_eps,
                                                m_.weights().lm_head.data(), ws_.logits.data(), m_.output_converted()};
    Head::logits(a);
    Head::q_logits(be_, static_cast<const value_type*>(zH), n_, S * D, D, m_.weights().q_w.data(),
                   m_.weights().q_b.data(), ws_.q_halt.data());
  }

 private:
  // A stream [n·S, D] to the callback: row b·S + p is position p of sample samples[b].
  void tap_stream(const std::string& name, const value_type* z) const {
    if (!taps_->wants(name)) return;
    const std::int64_t S = m_.config().total_len(), D = m_.dims().h, rows = n_ * S;
    std::vector<float> host(std::size_t(rows * D));
    engine::download_floats(be_, z, rows * D, host.data());
    std::vector<std::int64_t> pos(static_cast<std::size_t>(rows)), seq(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      pos[std::size_t(r)] = r % S;
      seq[std::size_t(r)] = samples_ ? (*samples_)[std::size_t(r / S)] : r / S;
    }
    taps_->on_tap(tap_event{name, step_, rows, D, host.data(), pos.data(), seq.data()});
  }

  const Model& m_;
  const backend_type& be_;
  trm_workspace<backend_type, value_type>& ws_;
  value_type* zH_;
  value_type* zL_;
  const value_type* x_;
  std::int64_t n_;
  const engine::active_rows& rows_;
  const tap_options* taps_ = nullptr;  // set only when a callback is
  std::int64_t step_ = -1;
  const std::vector<std::int64_t>* samples_ = nullptr;
};

}  // namespace muninn
