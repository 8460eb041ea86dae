#pragma once
/// \file
/// \brief HaltingPolicy (the "halting" slot): when a token's recurrence stops.
///
/// Concept HaltingPolicy: `slot` = slot::halting, `name`, `early_exit` (whether per-token exit is
/// compiled in), and
/// - `static halting_options resolve(halting_options)`: the call's options with the policy's defaults;
/// - `static bool exits(const halting_options&)`: whether this call may exit early at all;
/// - `static bool needs_logits(const halting_options&)`: whether a check needs the next-token
///   logits (they cost a readout and a head per check);
/// - `template <class Backend, class T> using monitor = …`: the exit test, made once per workspace
///   with `(const Backend&, std::int64_t max_rows, std::int64_t h, std::int64_t vocab)` and reused
///   by every call: `start(const halting_options&, const T* x0, rows)` (a call's options and its
///   states before the first step, backend memory),
///   `decide(const T* x, const T* logits, rows, std::vector<std::uint8_t>& exit)` (backend rows in,
///   one byte per row out) and `keep(const std::vector<std::uint8_t>& keep)` (drop the rows that left).
/// The built-in criteria decide on the backend; only the byte mask reaches the host.
/// `halting::on_host<Rule>` turns a per-token rule written on host floats into a policy.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/engine/rows.hpp"
#include "muninn/engine/transfer.hpp"
#include "muninn/policies/halting_options.hpp"
#include "muninn/ops/ops.hpp"
#include "muninn/policies/detect.hpp"

namespace muninn {
namespace halting {

/// \brief The built-in criteria's exit test on the backend. Its state — previous logits (kl),
/// previous state (latent-diff, cosine), previous entropy, previous arg-max and run length — has
/// one row per active token, is compacted as tokens leave, and is restarted by every call (the
/// workspace keeps the object, so its buffers are allocated once).
template <class Backend, class T>
class criterion_monitor {
 public:
  using value_type = T;  ///< the states' storage type
  /// \brief Allocates the per-row state for up to `max_rows` tokens (the wide rows come with
  /// the first call whose criterion needs them).
  criterion_monitor(const Backend& be, std::int64_t max_rows, std::int64_t h, std::int64_t vocab)
      : be_(be), rows_(max_rows), h_(h), V_(vocab) {
    const auto R = std::size_t(max_rows);
    for (auto* b : {&stat_, &prev_stat_, &cos_, &tmp_f_}) *b = be.template alloc<float>(R);
    for (auto* b : {&argmax_, &prev_argmax_, &count_, &tmp_i_}) *b = be.template alloc<std::int32_t>(R);
    mask_ = be.template alloc<std::uint8_t>(R);
  }

  /// \brief Starts a call: uniform previous distribution, entropy 100, arg-max −1, or the initial
  /// state, as the reference's trackers start.
  void start(const halting_options& o, const T* x0, std::int64_t rows) {
    c_ = o.criterion;
    thr_ = o.effective_threshold();
    const std::size_t need = std::size_t(rows_) * width();
    if (prev_.size() < need) {  // only when a wider criterion is asked for than before
      prev_ = be_.template alloc<T>(need);
      tmp_ = be_.template alloc<T>(need);
    }
    if (c_ == halt_criterion::kl) be_.template fill_zero<T>(prev_.data(), std::size_t(rows * V_));
    if (uses_state()) be_.copy(prev_.data(), x0, std::size_t(rows * h_));
    const std::vector<float> entropy(std::size_t(rows), 100.0f);
    const std::vector<std::int32_t> none(std::size_t(rows), -1), zero(std::size_t(rows), 0);
    be_.upload(prev_stat_.data(), entropy.data(), entropy.size());
    be_.upload(prev_argmax_.data(), none.data(), none.size());
    be_.upload(count_.data(), zero.data(), zero.size());
  }

  /// \brief Each row's statistic and decision on the backend; the byte mask is downloaded.
  /// \param x      the rows' states [rows, h] after this step (the state criteria read them)
  /// \param logits their logits [rows, V] (the distribution criteria read them)
  /// \param rows   rows of this check
  /// \param exit   receives one byte per row: 1 where the row exits
  /// \param values when not null, receives per row the value the rule compares with the threshold
  ///        (the `halt.value` tap): the KL, relative latent change or cosine distance (exit below
  ///        the threshold), |entropy − previous entropy| (exit below), or the run of equal
  ///        arg-maxes (exit at or above). Downloaded only when asked for.
  void decide(const T* x, const T* logits, std::int64_t rows, std::vector<std::uint8_t>& exit,
              std::vector<float>* values = nullptr) {
    halt_rule_kind kind = halt_rule_kind::below;
    const float* stat = stat_.data();
    switch (c_) {
      case halt_criterion::kl:
        kl_rows(be_, prev_.data(), logits, rows, V_, stat_.data());
        be_.copy(prev_.data(), logits, std::size_t(rows * V_));
        break;
      case halt_criterion::entropy_diff:
        entropy_rows(be_, logits, rows, V_, stat_.data());
        kind = halt_rule_kind::entropy_change;
        break;
      case halt_criterion::argmax_stable:
        argmax_rows(be_, logits, rows, V_, argmax_.data());
        kind = halt_rule_kind::argmax_run;
        stat = nullptr;
        break;
      default:  // latent_diff, cosine
        latent_change_rows(be_, x, prev_.data(), rows, h_, stat_.data(), cos_.data());
        if (c_ == halt_criterion::cosine) stat = cos_.data();
        be_.copy(prev_.data(), x, std::size_t(rows * h_));
        break;
    }
    std::vector<float> before;  // entropy_change: the previous entropies, which halt_decide overwrites
    if (values && kind == halt_rule_kind::entropy_change) {
      before.resize(std::size_t(rows));
      be_.download(before.data(), prev_stat_.data(), before.size());
    }
    halt_decide(be_, kind, stat, argmax_.data(), prev_stat_.data(), prev_argmax_.data(), count_.data(), rows, thr_,
                mask_.data());
    exit.resize(std::size_t(rows));
    be_.download(exit.data(), mask_.data(), std::size_t(rows));
    if (values) {
      values->resize(std::size_t(rows));
      if (kind == halt_rule_kind::argmax_run) {
        std::vector<std::int32_t> runs(static_cast<std::size_t>(rows));
        be_.download(runs.data(), count_.data(), runs.size());
        be_.synchronize();
        std::copy(runs.begin(), runs.end(), values->begin());
      } else {
        be_.download(values->data(), stat, values->size());
        be_.synchronize();
        for (std::size_t r = 0; r < before.size(); ++r)  // as halt_decide_row measures the change: in double
          (*values)[r] = float(std::abs(double((*values)[r]) - double(before[r])));
      }
    }
    be_.synchronize();
  }

  /// \brief decide() for calls whose tokens exit together (prefill_exit::prompt): latent-diff
  /// and cosine average their per-token statistic over each run's rows, as the reference's
  /// evaluators reduce a prompt; one byte per run. The monitor must have been started with every
  /// row, and is kept by rows.
  /// `values`, when not null, receives each run's mean statistic (rounded to float).
  void decide_pooled(const T* x, std::int64_t rows, const std::vector<engine::row_run>& runs,
                     std::vector<std::uint8_t>& exit, std::vector<float>* values = nullptr) {
    MUNINN_CHECK(uses_state(), "decide_pooled: only the state criteria average over a run");
    latent_change_rows(be_, x, prev_.data(), rows, h_, stat_.data(), cos_.data());
    be_.copy(prev_.data(), x, std::size_t(rows * h_));
    std::vector<float> v(static_cast<std::size_t>(rows));
    be_.download(v.data(), (c_ == halt_criterion::cosine ? cos_ : stat_).data(), v.size());
    be_.synchronize();
    exit.assign(runs.size(), 0);
    if (values) values->clear();
    for (std::size_t k = 0; k < runs.size(); ++k) {
      double sum = 0;
      for (std::int64_t i = runs[k].row0; i < runs[k].row0 + runs[k].n; ++i) sum += double(v[std::size_t(i)]);
      exit[k] = sum / double(runs[k].n) < thr_;
      if (values) values->push_back(float(sum / double(runs[k].n)));
    }
  }
  /// \brief Keeps the rows flagged in `keep`, in order.
  void keep(const std::vector<std::uint8_t>& keep) {
    if (width()) engine::compact_rows(be_, prev_.data(), std::int64_t(width()), keep, tmp_.data());
    engine::compact_rows(be_, prev_stat_.data(), 1, keep, tmp_f_.data());
    engine::compact_rows(be_, prev_argmax_.data(), 1, keep, tmp_i_.data());
    engine::compact_rows(be_, count_.data(), 1, keep, tmp_i_.data());
  }

 private:
  bool uses_state() const { return c_ == halt_criterion::latent_diff || c_ == halt_criterion::cosine; }
  // Elements of one row of the previous-value buffer: logits (kl), states, or none.
  std::size_t width() const { return std::size_t(c_ == halt_criterion::kl ? V_ : uses_state() ? h_ : 0); }

  Backend be_;
  halt_criterion c_ = halt_criterion::none;
  double thr_ = 0;
  std::int64_t rows_, h_, V_;
  typename Backend::template buffer<T> prev_, tmp_;
  typename Backend::template buffer<float> stat_, prev_stat_, cos_, tmp_f_;
  typename Backend::template buffer<std::int32_t> argmax_, prev_argmax_, count_, tmp_i_;
  typename Backend::template buffer<std::uint8_t> mask_;
};

namespace detail {

/// \brief The criterion-driven policies below share everything but their default criterion.
template <halt_criterion Default, bool EarlyExit>
struct criterion_rule {
  using slot = muninn::slot::halting;            ///< fills the Halting slot
  static constexpr bool early_exit = EarlyExit;  ///< whether per-token exit is compiled in
  /// \brief The per-call state: decisions on the backend.
  template <class Backend, class T>
  using monitor = criterion_monitor<Backend, T>;

  /// \brief Fills in the default criterion (and so its default threshold).
  static halting_options resolve(halting_options o) {
    if (o.criterion == halt_criterion::policy_default) o.criterion = Default;
    return o;
  }
  /// \brief Whether the resolved options ask for early exit.
  static bool exits(const halting_options& o) { return o.criterion != halt_criterion::none; }
  /// \brief Logit criteria (kl, entropy-diff, argmax-stable) need the next-token distribution.
  static bool needs_logits(const halting_options& o) { return muninn::needs_logits(o.criterion); }
};

template <class A>
A& arg();
template <class R> using rule_tracker = typename R::tracker;
template <class R>
using rule_start = decltype(R::start(halting_options{}, arg<const float*>(), std::int64_t(), std::int64_t()));
template <class R>
using rule_update = decltype(bool(R::update(arg<typename R::tracker>(), arg<const float*>(), arg<const float*>(),
                                            std::int64_t())));

}  // namespace detail

/// \brief Exactly the requested number of steps for every token; asking for an exit criterion is an error.
struct fixed : detail::criterion_rule<halt_criterion::none, false> {
  static constexpr const char* name = "fixed";  ///< spelling used in messages
  /// \brief Rejects any exit criterion.
  static halting_options resolve(halting_options o) {
    MUNINN_CHECK(o.criterion == halt_criterion::policy_default || o.criterion == halt_criterion::none,
                 "this model was compiled with halting::fixed, which has no early exit; use halting::adaptive "
                 "(e.g. huginn_adaptive_arch)");
    o.criterion = halt_criterion::none;
    return o;
  }
};
/// \brief Per-token early exit with the criterion chosen per call (none by default).
struct adaptive : detail::criterion_rule<halt_criterion::none, true> {
  static constexpr const char* name = "adaptive";  ///< spelling used in messages
};
/// \brief Per-token early exit on KL(p_{i-1} ‖ p_i) < 5e-4 unless a call chooses otherwise.
struct kl_divergence : detail::criterion_rule<halt_criterion::kl, true> {
  static constexpr const char* name = "kl_divergence";  ///< spelling used in messages
};

/// \brief Runs a per-token rule written on host floats: each check downloads the rows' states
/// (and logits when the rule asks) and calls the rule per row. For rules one writes in a few
/// lines; the built-in criteria decide on the backend instead.
///
/// `Rule` provides `name`, a `tracker` type, `resolve`, `exits`, `needs_logits` (as a
/// HaltingPolicy does) and `static tracker start(const halting_options&, const float* x0, h, vocab)`,
/// `static bool update(tracker&, const float* x, const float* logits, h)` (true: exit).
template <class Rule>
struct on_host : Rule {
  static_assert(muninn::detail::detected_v<Rule, detail::rule_tracker>,
                "muninn::arch: the Halting slot needs a HaltingPolicy: halting::on_host<Rule> is missing a per-token "
                "type `tracker`");
  static_assert(muninn::detail::detected_v<Rule, detail::rule_start>,
                "muninn::arch: the Halting slot needs a HaltingPolicy: halting::on_host<Rule> is missing static "
                "tracker start(const halting_options&, const float* x0, int64 h, int64 vocab)");
  static_assert(muninn::detail::detected_v<Rule, detail::rule_update>,
                "muninn::arch: the Halting slot needs a HaltingPolicy: halting::on_host<Rule> is missing static bool "
                "update(tracker&, const float* x, const float* logits, int64 h)");
  using slot = muninn::slot::halting;  ///< fills the Halting slot
  static constexpr bool early_exit = true;  ///< per-token exit is compiled in

  /// \brief Downloads each check's rows and asks the rule per row.
  template <class Backend, class T>
  class monitor {
   public:
    /// \brief Room for `max_rows` rows.
    monitor(const Backend& be, std::int64_t max_rows, std::int64_t h, std::int64_t vocab)
        : be_(be), h_(h), V_(vocab), x_(std::size_t(max_rows * h)) {}
    /// \brief One tracker per row from its initial state.
    void start(const halting_options& o, const T* x0, std::int64_t rows) {
      o_ = o;
      engine::download_floats(be_, x0, rows * h_, x_.data());
      trackers_.clear();
      for (std::int64_t r = 0; r < rows; ++r) trackers_.push_back(Rule::start(o_, x_.data() + r * h_, h_, V_));
    }
    /// \brief The rule's answer for each row.
    void decide(const T* x, const T* logits, std::int64_t rows, std::vector<std::uint8_t>& exit) {
      engine::download_floats(be_, x, rows * h_, x_.data());
      if (logits) {
        logits_.resize(std::max(logits_.size(), std::size_t(rows * V_)));  // grows once, at the first logit rule
        engine::download_floats(be_, logits, rows * V_, logits_.data());
      }
      exit.assign(std::size_t(rows), 0);
      for (std::int64_t r = 0; r < rows; ++r)
        exit[std::size_t(r)] = Rule::update(trackers_[std::size_t(r)], x_.data() + r * h_,
                                            logits ? logits_.data() + r * V_ : nullptr, h_);
    }
    /// \brief Drops the trackers of the rows that left.
    void keep(const std::vector<std::uint8_t>& keep) {
      std::size_t out = 0;
      for (std::size_t r = 0; r < trackers_.size(); ++r)
        if (keep[r]) trackers_[out++] = std::move(trackers_[r]);
      trackers_.erase(trackers_.begin() + std::ptrdiff_t(out), trackers_.end());
    }

   private:
    Backend be_;
    halting_options o_;
    std::int64_t h_, V_;
    std::vector<float> x_, logits_;
    std::vector<typename Rule::tracker> trackers_;
  };
};

}  // namespace halting
}  // namespace muninn
