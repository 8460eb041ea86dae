#pragma once
/// \file
/// \brief Activation memory for a stack of rows, allocated up front so that prefill and decode
/// never allocate on the backend.

#include <cstdint>
#include <memory>
#include <typeinfo>
#include <utility>
#include <vector>

#include "muninn/engine/layer_dims.hpp"

namespace muninn {

/// \brief Activation memory for a stack of up to `rows()` token rows on a backend.
///
/// The named streams: `e` (embedded input, prelude output), `x` (recurrent state), `alt` (the
/// state's double buffer), `e_part` (an injection's per-call part), `head` (readout copy).
template <class Backend, class T>
class workspace {
 public:
  using buffer = typename Backend::template buffer<T>;  ///< backend buffer type

  /// \brief Allocates everything for `rows` stacked tokens.
  workspace(const Backend& be, const layer_dims& d, std::int64_t vocab, std::int64_t rows) : rows_(rows) {
    const auto R = std::size_t(rows);
    for (buffer* b : {&e_, &x_, &alt_, &e_part_, &head_, &normed_, &proj_, &last_, &checked_})
      *b = be.template alloc<T>(R * d.h);
    q_ = be.template alloc<T>(R * d.q_dim());
    attn_ = be.template alloc<T>(R * d.q_dim());
    mlp_in_ = be.template alloc<T>(R * 2 * d.inter);
    mlp_act_ = be.template alloc<T>(R * d.inter);
    k_tmp_ = be.template alloc<T>(R * d.kv_dim());
    v_tmp_ = be.template alloc<T>(R * d.kv_dim());
    logits_ = be.template alloc<T>(R * vocab);
    ids_ = be.template alloc<std::int32_t>(R);
    pos_ = be.template alloc<std::int32_t>(R);
    route_hidden_ = be.template alloc<T>(R * 2 * d.h);
    route_idx_ = be.template alloc<std::int32_t>(R);
    route_pos_ = be.template alloc<std::int32_t>(R);
    gates_ = be.template alloc<float>(R);
    host_ids.resize(R);
    host_rows.resize(R * d.h);
  }
  /// \brief Capacity in stacked rows.
  std::int64_t rows() const { return rows_; }
  /// \brief Scratch of one layer call.
  layer_scratch<T> scratch() {
    return layer_scratch<T>{normed_.data(), q_.data(),      attn_.data(),  proj_.data(),
                            mlp_in_.data(), mlp_act_.data(), k_tmp_.data(), v_tmp_.data()};
  }
  T* e() { return e_.data(); }              ///< embedded input / prelude output [rows, h]
  T* x() { return x_.data(); }              ///< recurrent state [rows, h]
  T* alt() { return alt_.data(); }          ///< second state buffer [rows, h]
  T* e_part() { return e_part_.data(); }    ///< injection's per-call part [rows, h]
  T* head() { return head_.data(); }        ///< readout copy / compaction scratch [rows, h]
  T* normed() { return normed_.data(); }    ///< normalised rows for a head [rows, h]
  T* last() { return last_.data(); }        ///< each run's last row, gathered for exit tests [rows, h]
  T* checked() { return checked_.data(); }  ///< states at the last exit check (reference-parity outputs) [rows, h]
  T* logits() { return logits_.data(); }    ///< head output [rows, V]
  std::int32_t* ids() { return ids_.data(); }  ///< token ids on the backend [rows]
  std::int32_t* pos() { return pos_.data(); }  ///< each row's position on the backend [rows]
  T* route_hidden() { return route_hidden_.data(); }  ///< a router network's hidden layer [rows, 2h]
  std::int32_t* route_idx() { return route_idx_.data(); }  ///< rows a router picked, on the backend [rows]
  std::int32_t* route_pos() { return route_pos_.data(); }  ///< positions of the picked rows [rows]
  float* gates() { return gates_.data(); }                  ///< the picked rows' gates [rows]

  /// \brief A policy's per-call object of type S kept across calls (the exit test's backend
  /// buffers, an input policy's scratch): made by `make()` the first time a call needs that type,
  /// then reused, so that decoding does not allocate per token. One object per type.
  template <class S, class Make>
  S& reuse(Make&& make) {
    for (const auto& st : states_)
      if (st.first == &typeid(S)) return *static_cast<S*>(st.second.get());
    states_.emplace_back(&typeid(S), std::shared_ptr<void>(new S(make()), [](void* p) { delete static_cast<S*>(p); }));
    return *static_cast<S*>(states_.back().second.get());
  }

  std::vector<std::int32_t> host_ids;  ///< staging of the ids
  std::vector<float> host_rows;        ///< states downloaded for trajectory hooks [rows, h]

 private:
  std::int64_t rows_;
  buffer e_, x_, alt_, e_part_, head_, normed_, last_, checked_, q_, attn_, proj_, mlp_in_, mlp_act_, k_tmp_, v_tmp_,
      logits_, route_hidden_;
  typename Backend::template buffer<std::int32_t> ids_, pos_, route_idx_, route_pos_;
  typename Backend::template buffer<float> gates_;
  std::vector<std::pair<const std::type_info*, std::shared_ptr<void>>> states_;  // see reuse()
};

}  // namespace muninn
