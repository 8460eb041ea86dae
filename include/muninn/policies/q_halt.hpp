#pragma once
/// \file
/// \brief The Q head and its halting decision (TRM / HRM): `head::lm_q_halt` (logits from the
/// answer stream with no final norm, and two Q logits per sample) and `halting::q_halt`, whose
/// monitor decides each sample's halt on the backend so that only a byte per sample reaches the
/// host.

#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/ops/halt_math.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"
#include "muninn/policies/halting_options.hpp"
#include "muninn/policies/head.hpp"

namespace muninn {

/// \brief The per-call decision of `halting::q_halt`: each sample's halt from its Q logits, made
/// on the backend (`q_halt_decide`); only the byte mask is downloaded.
template <class Backend, class T>
class q_halt_monitor {
 public:
  /// \brief A monitor for up to `rows` samples (the other sizes of the HaltingPolicy's monitor
  /// constructor are not used).
  q_halt_monitor(const Backend& be, std::int64_t rows, std::int64_t = 0, std::int64_t = 0)
      : be_(be), mask_(be.template alloc<std::uint8_t>(std::size_t(rows > 0 ? rows : 1))), capacity_(rows) {}

  /// \brief halt[r] = 1 when sample r halts under `kind` (q [rows, 2] on the backend: q_halt,
  /// q_continue). q_halt_kind::never touches nothing on the backend.
  /// \param q         the samples' Q logits on the backend
  /// \param rows      samples (at most the monitor's capacity)
  /// \param kind      the rule
  /// \param threshold the bound of q_halt_kind::above
  /// \param halt      output: one byte per sample on the host
  void decide(const T* q, std::int64_t rows, q_halt_kind kind, float threshold, std::vector<std::uint8_t>& halt) {
    MUNINN_CHECK(rows >= 0 && rows <= capacity_, "q_halt_monitor: ", rows, " samples for a monitor of ", capacity_);
    halt.assign(std::size_t(rows), 0);
    if (kind == q_halt_kind::never || rows == 0) return;
    q_halt_decide(be_, q, rows, kind, threshold, mask_.data());
    be_.download(halt.data(), mask_.data(), std::size_t(rows));
  }

 private:
  Backend be_;
  typename Backend::template buffer<std::uint8_t> mask_;
  std::int64_t capacity_ = 0;
};

namespace halting {

/// \brief Learned halting from a Q head (TRM / HRM): after each supervision step a sample halts
/// when its Q logits say so (`q_halt_kind`), decided on the backend. Which rule and how many steps
/// at most are run-time choices of the call; the monitor is `q_halt_monitor`.
struct q_halt {
  using slot = muninn::slot::halting;            ///< fills the Halting slot
  static constexpr const char* name = "q_halt";  ///< spelling used in messages
  static constexpr bool early_exit = true;       ///< samples leave the batch when they halt
  /// \brief The options as given (the rule comes with the call).
  static halting_options resolve(halting_options h) { return h; }
  /// \brief Samples may halt before the last step.
  static bool exits(const halting_options&) { return true; }
  /// \brief The decision reads the Q logits, not the vocabulary logits.
  static bool needs_logits(const halting_options&) { return false; }
  /// \brief The per-call decision.
  template <class Backend, class T>
  using monitor = q_halt_monitor<Backend, T>;
};

}  // namespace halting

namespace head {

/// \brief TRM / HRM's heads: logits = x · Wᵀ with no final norm, and beside them the Q head,
/// q = x₀ · W_qᵀ + b on one row per sample (position 0, a puzzle-prefix position).
struct lm_q_halt {
  using slot = muninn::slot::head;                  ///< fills the Head slot
  static constexpr const char* name = "lm_q_halt";  ///< spelling used in messages
  /// \brief One GEMM against the output matrix (no norm: the stream is post-normed already).
  template <class Backend, class T>
  static void logits(const head_args<Backend, T>& a) {
    output_gemm(a);
  }
  /// \brief q [samples, 2] = (q_halt, q_continue) from the first row of each sample.
  /// \param be      the backend
  /// \param x       the samples' rows, sample b's first row at x + b·stride
  /// \param samples samples
  /// \param stride  elements from one sample's first row to the next's (S·h)
  /// \param h       hidden size
  /// \param w       Q-head weight [2, h]
  /// \param b       Q-head bias [2]
  /// \param q       output [samples, 2] in the compute type
  template <class Backend, class T>
  static void q_logits(const Backend& be, const T* x, std::int64_t samples, std::int64_t stride, std::int64_t h,
                       const T* w, const T* b, T* q) {
    gemm_nt(be, samples, 2, h, 1.0f, x, stride, w, h, 0.0f, q, 2);
    add_bias_rows(be, q, 2, b, samples, 2);
  }
};

}  // namespace head
}  // namespace muninn
