#pragma once
/// \file
/// \brief Mixture-of-Recursions routers (the "router" slot): which tokens run which recursion of
/// the shared block, and with what gate (Bae et al. 2025).
///
/// A routing RouterPolicy adds `template <class Pass> static void recurse(Pass&)` to the
/// RouterPolicy concept: the whole recursion schedule over the stream `p.e()`, run by
/// `recurrence::mixture` between the first (prelude) and the last (coda) layers. The router
/// network and the selection are the policy's; gather, layers and gated scatter are the pass's.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/kv_cache.hpp"
#include "muninn/engine/routing.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/families/mor/config.hpp"
#include "muninn/families/mor/weights.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/router.hpp"

namespace muninn {
namespace router {
namespace detail {

/// \brief The routers read their settings from mor_config and their weights from mor_weights:
/// a model whose family's types do not derive from them fails here, with the fix named.
template <class Pass>
constexpr bool reads_mor_state() {
  using M = std::decay_t<decltype(std::declval<Pass&>().model())>;
  static_assert(std::is_base_of_v<mor_config, typename M::config_type> &&
                    std::is_base_of_v<mor_weights<typename M::backend_type, typename M::value_type>,
                                      typename M::weights_type>,
                "muninn::arch: the Router slot's expert_choice / token_choice read config().mor and "
                "weights().routers: use a Family whose config_type derives from mor_config and whose "
                "weights_type derives from mor_weights (family::mor, or a user family built on them)");
  return true;
}

/// \brief The router network of recursion `r` on n rows `x` [n, h]: logits [n, out] on the host.
/// Linear, or Linear(h→2h) → GELU → Linear(2h→out); the input is divided by `temp` first.
template <class Pass, class T>
std::vector<float> router_logits(Pass& p, std::size_t r, const T* x, std::int64_t n, std::int64_t out) {
  const auto& m = p.model();
  const auto& be = m.backend();
  const auto& w = m.weights().routers.at(r);
  const std::int64_t h = m.dims().h;
  const float inv_temp = float(1.0 / m.config().mor.temp);
  T* y = p.ws().logits();  // [n, out] scratch: the head has not run yet
  if (w.w2.size() == 0) {
    gemm_nt(be, n, out, h, inv_temp, x, h, w.w1.data(), h, 0.0f, y, out);
  } else {
    T* hid = p.ws().route_hidden();
    gemm_nt(be, n, 2 * h, h, inv_temp, x, h, w.w1.data(), h, 0.0f, hid, 2 * h);
    gelu(be, hid, n * 2 * h);
    gemm_nt(be, n, out, 2 * h, 1.0f, hid, 2 * h, w.w2.data(), 2 * h, 0.0f, y, out);
  }
  std::vector<float> logits(static_cast<std::size_t>(n * out));
  engine::download_floats(be, y, n * out, logits.data());
  return logits;
}

inline float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

/// \brief The rows of `from` (a subset of the stack) whose flag is set, as a subset of the stack.
inline engine::row_subset keep_rows(const engine::row_subset& from, const std::vector<std::uint8_t>& keep) {
  engine::row_subset out;
  std::vector<std::int64_t> local;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) {
      local.push_back(std::int64_t(i));
      out.idx.push_back(from.idx[i]);
    }
  out.rows = from.rows.gathered(local);
  return out;
}

/// \brief Every row of the stack.
template <class Pass>
engine::row_subset all_rows(Pass& p) {
  return engine::pick_rows(p.rows(), std::vector<std::uint8_t>(std::size_t(p.rows().size()), 1));
}

}  // namespace detail

/// \brief Expert-choice routing: before recursion r, a router scores the tokens that ran
/// recursion r − 1 (all tokens before the first), keeps some, and the kept ones get
/// H ← H + g·f_r(H) with g = α·σ(logit) (or α·tanh, or the raw logit).
///
/// Which tokens are kept (`run_options::routing`):
/// - `scoring` (the reference): the top k_r = max(1, ⌊capacity_r · T⌋) of each sequence's
///   candidates by gate, T the tokens the sequence feeds in the call; not causal.
/// - `causal` (decoding): recursion 0 keeps everyone; recursion r ≥ 1 keeps a candidate whose
///   σ(logit) ≥ 0.5 (tanh, none: logit ≥ 0), the decision the router was trained to predict.
struct expert_choice {
  using slot = muninn::slot::router;                  ///< fills the Router slot
  static constexpr bool routes = true;                ///< tokens take different depths
  static constexpr const char* name = "expert_choice";  ///< spelling used in messages

  /// \brief The recursions, on the stream p.e().
  template <class Pass>
  static void recurse(Pass& p) {
    static_assert(detail::reads_mor_state<Pass>());
    const auto& m = p.model();
    const auto& mor = m.config().mor;
    auto* buf = p.ws().x();  // the picked rows: free in a routed model
    engine::row_subset cand = detail::all_rows(p);
    for (std::int64_t r = 0; r < mor.recursions && !cand.idx.empty(); ++r) {
      const std::int64_t n = std::int64_t(cand.idx.size());
      engine::gather(m.backend(), cand, p.e(), m.dims().h, p.ws().route_idx(), buf);
      const std::vector<float> logit = detail::router_logits(p, std::size_t(r), buf, n, 1);
      std::vector<float> gate(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) gate[std::size_t(i)] = gate_of(mor.router_func, mor.alpha, logit[std::size_t(i)]);
      const std::vector<std::uint8_t> keep = p.options().routing == routing_mode::scoring
                                                 ? top_k(p, cand, gate, capacity(mor, r))
                                                 : passes(mor.router_func, logit, r);
      if (p.options().taps.on_tap) tap_choice(p, r, cand, logit, gate, keep);
      engine::row_subset sel = detail::keep_rows(cand, keep);
      if (sel.idx.empty()) break;
      std::vector<float> g;
      for (std::size_t i = 0; i < keep.size(); ++i)
        if (keep[i]) g.push_back(gate[i]);
      p.run_subset(sel, p.e(), buf, layer_group::core, r);
      m.backend().upload(p.ws().gates(), g.data(), g.size());
      engine::scatter_add(m.backend(), sel, p.e(), m.dims().h, buf, p.ws().gates(), p.ws().route_idx());
      p.record_depth(sel, std::int32_t(r + 1));
      cand = std::move(sel);
    }
  }

  /// \brief The gate of a router logit: α·σ(z), α·tanh(z) or z.
  static float gate_of(const std::string& func, double alpha, float z) {
    if (func == "sigmoid") return float(alpha) * detail::sigmoid(z);
    if (func == "tanh") return float(alpha) * std::tanh(z);
    return z;
  }
  /// \brief The share of candidates recursion r keeps: the config's, or (Nr − r)/Nr.
  static double capacity(const mor_settings& mor, std::int64_t r) {
    if (!mor.capacity.empty()) return mor.capacity.at(std::size_t(r));
    return double(mor.recursions - r) / double(mor.recursions);
  }

 private:
  // Taps "router.logits", "router.gates" and "router.selected" (1 kept, 0 dropped) of recursion
  // r's candidates.
  template <class Pass>
  static void tap_choice(Pass& p, std::int64_t r, const engine::row_subset& cand, const std::vector<float>& logit,
                         const std::vector<float>& gate, const std::vector<std::uint8_t>& keep) {
    if (p.tapping("router.logits")) p.tap_host("router.logits", r, logit.data(), cand.rows, 1);
    if (p.tapping("router.gates")) p.tap_host("router.gates", r, gate.data(), cand.rows, 1);
    if (p.tapping("router.selected")) {
      const std::vector<float> sel(keep.begin(), keep.end());
      p.tap_host("router.selected", r, sel.data(), cand.rows, 1);
    }
  }
  // Causal rule: everyone at recursion 0, then σ(logit) ≥ 0.5 (logit ≥ 0 for tanh and none).
  static std::vector<std::uint8_t> passes(const std::string& func, const std::vector<float>& logit, std::int64_t r) {
    std::vector<std::uint8_t> keep(logit.size(), 1);
    if (r == 0) return keep;
    for (std::size_t i = 0; i < logit.size(); ++i)
      keep[i] = func == "sigmoid" ? detail::sigmoid(logit[i]) >= 0.5f : logit[i] >= 0.0f;
    return keep;
  }
  // Scoring rule: per sequence, the k = max(1, int(cap·T)) candidates with the largest gates
  // (ties to the earlier token), kept in position order.
  template <class Pass>
  static std::vector<std::uint8_t> top_k(Pass& p, const engine::row_subset& cand, const std::vector<float>& gate,
                                         double cap) {
    std::vector<std::uint8_t> keep(gate.size(), 0);
    std::size_t b = 0;
    while (b < gate.size()) {
      std::size_t e = b;
      const std::int32_t seq = cand.rows.seq(std::int64_t(b));
      while (e < gate.size() && cand.rows.seq(std::int64_t(e)) == seq) ++e;
      const std::int64_t k = std::max<std::int64_t>(1, std::int64_t(cap * double(p.fed(seq))));
      std::vector<std::size_t> order(e - b);
      std::iota(order.begin(), order.end(), b);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) { return gate[a] > gate[c]; });
      for (std::size_t i = 0; i < order.size() && std::int64_t(i) < k; ++i) keep[order[i]] = 1;
      b = e;
    }
    return keep;
  }
};

/// \brief Token-choice routing: one router on the first layer's output H¹ gives each token a
/// depth j* + 1 (argmax of α·softmax(z), or α·σ(z), plus an optional balancing bias that steers
/// the choice only) and a gate g = the unbiased probability of j*. Every token runs recursions
/// 0 … j* ungated and leaves with H¹ + g·f^{(j*+1)}(H¹), as the reference computes it. Causal
/// by construction.
struct token_choice {
  using slot = muninn::slot::router;                   ///< fills the Router slot
  static constexpr bool routes = true;                 ///< tokens take different depths
  static constexpr const char* name = "token_choice";  ///< spelling used in messages

  /// \brief The recursions, on the stream p.e() (H¹ on entry, the routed output on exit).
  template <class Pass>
  static void recurse(Pass& p) {
    static_assert(detail::reads_mor_state<Pass>());
    const auto& m = p.model();
    const auto& be = m.backend();
    const auto& mor = m.config().mor;
    const std::int64_t h = m.dims().h, Nr = mor.recursions, n = p.rows().size();
    const std::vector<float> z = detail::router_logits(p, 0, p.e(), n, Nr);
    std::vector<std::int64_t> depth(static_cast<std::size_t>(n));
    std::vector<float> gate(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) choose(mor, m.weights().routers[0].bias, z.data() + i * Nr, depth[i], gate[i]);
    if (p.options().taps.on_tap) tap_choice(p, z, depth, gate);
    // h: the running state of the tokens still recurring (a compacted copy of their rows).
    engine::row_subset active = detail::all_rows(p);
    auto* run = p.ws().x();
    auto* tmp = p.ws().alt();
    be.copy(run, p.e(), std::size_t(n * h));
    std::vector<std::int64_t> active_depth = depth;
    std::vector<float> active_gate = gate;
    for (std::int64_t r = 0; r < Nr && !active.idx.empty(); ++r) {
      engine::upload_positions(be, active.rows, p.ws().route_pos());
      p.run_layers_on(active.rows, p.ws().route_pos(), layer_group::core, run, r);
      // Tokens whose depth ends here leave: e ← e + g·h.
      std::vector<std::uint8_t> leave(active.idx.size()), stay(active.idx.size());
      for (std::size_t i = 0; i < leave.size(); ++i) {
        leave[i] = active_depth[i] == r;
        stay[i] = !leave[i];
      }
      add_leaving(p, active, leave, active_gate, run, tmp);
      p.record_depth(detail::keep_rows(active, leave), std::int32_t(r + 1));
      engine::compact_rows(be, run, h, stay, tmp);
      active = detail::keep_rows(active, stay);
      active_depth = kept(active_depth, stay);
      active_gate = kept(active_gate, stay);
    }
  }

  /// \brief A token's probabilities prob[Nr] from its router logits z[Nr]: α·softmax(z) or α·σ(z).
  static void probabilities(const mor_settings& mor, const float* z, float* prob) {
    const std::int64_t Nr = mor.recursions;
    if (mor.router_func == "sigmoid") {
      for (std::int64_t i = 0; i < Nr; ++i) prob[i] = detail::sigmoid(z[i]) * float(mor.alpha);
    } else {  // softmax
      const float mx = *std::max_element(z, z + Nr);
      float sum = 0;
      for (std::int64_t i = 0; i < Nr; ++i) sum += prob[i] = std::exp(z[i] - mx);
      for (std::int64_t i = 0; i < Nr; ++i) prob[i] = prob[i] / sum * float(mor.alpha);
    }
  }

  /// \brief A token's depth index j* and gate from its router logits z[Nr].
  static void choose(const mor_settings& mor, const std::vector<float>& bias, const float* z, std::int64_t& j,
                     float& g) {
    const std::int64_t Nr = mor.recursions;
    std::vector<float> prob(static_cast<std::size_t>(Nr));
    probabilities(mor, z, prob.data());
    j = 0;
    for (std::int64_t i = 1; i < Nr; ++i) {
      const float a = prob[i] + (bias.empty() ? 0.0f : bias[i]), b = prob[j] + (bias.empty() ? 0.0f : bias[j]);
      if (a > b) j = i;
    }
    g = prob[std::size_t(j)];
  }

 private:
  // Taps "router.logits" [n, Nr], "router.probs" [n, Nr] (the unbiased α-scaled probabilities),
  // "router.gates" [n, 1] and "router.depths" [n, 1] (recursions chosen, j* + 1) of every row.
  template <class Pass>
  static void tap_choice(Pass& p, const std::vector<float>& z, const std::vector<std::int64_t>& depth,
                         const std::vector<float>& gate) {
    const auto& mor = p.model().config().mor;
    const std::int64_t Nr = mor.recursions, n = std::int64_t(gate.size());
    if (p.tapping("router.logits")) p.tap_host("router.logits", -1, z.data(), p.rows(), Nr);
    if (p.tapping("router.probs")) {
      std::vector<float> prob(static_cast<std::size_t>(n * Nr));
      for (std::int64_t i = 0; i < n; ++i) probabilities(mor, z.data() + i * Nr, prob.data() + i * Nr);
      p.tap_host("router.probs", -1, prob.data(), p.rows(), Nr);
    }
    if (p.tapping("router.gates")) p.tap_host("router.gates", -1, gate.data(), p.rows(), 1);
    if (p.tapping("router.depths")) {
      std::vector<float> d(depth.size());
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = float(depth[i] + 1);
      p.tap_host("router.depths", -1, d.data(), p.rows(), 1);
    }
  }
  template <class V>
  static V kept(const V& v, const std::vector<std::uint8_t>& keep) {
    V out;
    for (std::size_t i = 0; i < keep.size(); ++i)
      if (keep[i]) out.push_back(v[i]);
    return out;
  }
  // e[t] += g_t · run[i] for the active rows i flagged in `leave` (t = the row's place in the stack).
  template <class Pass, class T>
  static void add_leaving(Pass& p, const engine::row_subset& active, const std::vector<std::uint8_t>& leave,
                          const std::vector<float>& gate, const T* run, T* tmp) {
    const auto& be = p.model().backend();
    const std::int64_t h = p.model().dims().h;
    engine::row_subset out;
    std::vector<float> g;
    std::int64_t m = 0;
    for (std::size_t i = 0; i < leave.size(); ++i) {
      if (!leave[i]) continue;
      be.copy(tmp + m * h, run + std::int64_t(i) * h, std::size_t(h));
      out.idx.push_back(active.idx[i]);
      g.push_back(gate[i]);
      ++m;
    }
    if (m == 0) return;
    be.upload(p.ws().gates(), g.data(), g.size());
    engine::scatter_add(be, out, p.e(), h, tmp, p.ws().gates(), p.ws().route_idx());
  }
};

}  // namespace router
}  // namespace muninn
