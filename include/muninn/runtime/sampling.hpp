#pragma once
/// \file
/// \brief Host-side next-token sampling in the order of Huginn's `_sample_next_token`.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn {

/// \brief Settings of a sampler. The defaults sample from the plain softmax.
struct sampling_params {
  float temperature = 1.0f;         ///< Divides the logits; 0 means greedy.
  int top_k = 0;                    ///< Keep the k most probable tokens (ties with the k-th kept); 0 = off.
  float top_p = 1.0f;               ///< Nucleus mass in (0, 1]; 1 = off.
  float min_p = 0.0f;               ///< Drop tokens below min_p × the largest probability; 0 = off.
  float repetition_penalty = 1.0f;  ///< HF-style penalty on tokens already seen; 1 = off.
  bool greedy = false;              ///< Argmax of the (penalised) logits instead of sampling.
  std::uint64_t seed = 0;           ///< Seed of the sampler's std::mt19937_64.
};

/// \brief Draws token ids from logits on the host, reproducibly for a given seed.
///
/// Order (Huginn `_sample_next_token`): repetition penalty (logit > 0 ? logit / p : logit × p, once per
/// distinct previous token) → / temperature → softmax → top-k → top-p → min-p → renormalise (sum clamped
/// ≥ 1e-10) → multinomial. As in the reference, top-p accumulates the top-k-filtered probabilities without renormalising
/// them first, and removes a token when the cumulative probability *including* it exceeds top_p (the most
/// probable token always stays). Arithmetic is in double; the uniform draw is the top 53 bits of
/// std::mt19937_64 (whose output the C++ standard fixes), so equal seeds give equal tokens on every platform.
/// Greedy (or temperature 0) is the first maximum of the penalised logits and consumes no random number.
class sampler {
 public:
  /// \brief Checks the settings and seeds the generator.
  /// \throws muninn::error for a negative temperature or top_k, top_p outside (0, 1], min_p outside [0, 1]
  ///         or a repetition penalty that is not positive
  explicit sampler(const sampling_params& params) : params_(params), rng_(params.seed) {
    MUNINN_CHECK(std::isfinite(params.temperature) && params.temperature >= 0.0f,
                 "sampling temperature must be finite and >= 0, got ", params.temperature);
    MUNINN_CHECK(params.top_k >= 0, "sampling top_k must be >= 0, got ", params.top_k);
    MUNINN_CHECK(params.top_p > 0.0f && params.top_p <= 1.0f, "sampling top_p must be in (0, 1], got ", params.top_p);
    MUNINN_CHECK(params.min_p >= 0.0f && params.min_p <= 1.0f, "sampling min_p must be in [0, 1], got ", params.min_p);
    MUNINN_CHECK(std::isfinite(params.repetition_penalty) && params.repetition_penalty > 0.0f,
                 "sampling repetition_penalty must be > 0, got ", params.repetition_penalty);
  }

  /// \brief The settings this sampler was made with.
  const sampling_params& params() const { return params_; }

  /// \brief Restarts the random sequence from `seed`.
  void reseed(std::uint64_t seed) {
    params_.seed = seed;
    rng_.seed(seed);
  }

  /// \brief True when sample() takes the argmax (greedy flag or temperature 0).
  bool is_greedy() const { return params_.greedy || params_.temperature == 0.0f; }

  /// \brief Picks the next token.
  /// \param logits `vocab` scores of the next token
  /// \param vocab number of logits
  /// \param previous ids seen so far (prompt and generated), for the repetition penalty; ids outside
  ///        [0, vocab) are ignored
  /// \param n_previous number of previous ids
  /// \throws muninn::error when the logits hold NaN or +inf, or every token has probability 0
  std::int32_t sample(const float* logits, std::int64_t vocab, const std::int32_t* previous = nullptr,
                      std::size_t n_previous = 0) {
    MUNINN_CHECK(vocab > 0, "sampling needs at least one logit, got vocab ", vocab);
    penalised(logits, vocab, previous, n_previous);
    if (is_greedy()) return argmax();
    filter();
    const double u = double(rng_() >> 11) * 0x1.0p-53;
    double total = 0.0;
    for (double p : work_) total += p;
    const double target = u * total;
    double cum = 0.0;
    std::int64_t last = -1;
    for (std::int64_t i = 0; i < vocab; ++i) {
      const double p = work_[std::size_t(i)];
      if (p <= 0.0) continue;
      cum += p;
      last = i;
      if (cum > target) return std::int32_t(i);
    }
    return std::int32_t(last);  // only when rounding leaves cum <= target at the end
  }

  /// \brief sample() with the previous ids in a vector.
  std::int32_t sample(const float* logits, std::int64_t vocab, const std::vector<std::int32_t>& previous) {
    return sample(logits, vocab, previous.data(), previous.size());
  }

  /// \brief The distribution sample() draws from (after every filter, renormalised); for tests and inspection.
  ///
  /// For a greedy sampler this is one-hot on the argmax. Uses no random numbers.
  std::vector<double> probabilities(const float* logits, std::int64_t vocab, const std::int32_t* previous = nullptr,
                                    std::size_t n_previous = 0) {
    MUNINN_CHECK(vocab > 0, "sampling needs at least one logit, got vocab ", vocab);
    penalised(logits, vocab, previous, n_previous);
    if (is_greedy()) {
      std::vector<double> one_hot(std::size_t(vocab), 0.0);
      one_hot[std::size_t(argmax())] = 1.0;
      return one_hot;
    }
    filter();
    return work_;
  }

 private:
  // Copies the logits to work_ (double) and applies the repetition penalty.
  void penalised(const float* logits, std::int64_t vocab, const std::int32_t* previous, std::size_t n_previous) {
    work_.assign(logits, logits + vocab);
    for (double x : work_) MUNINN_CHECK(!std::isnan(x) && x != HUGE_VAL, "sampling: logits contain NaN or +inf");
    if (params_.repetition_penalty == 1.0f || n_previous == 0) return;
    const double pen = params_.repetition_penalty;
    seen_.assign(std::size_t(vocab), 0);
    for (std::size_t k = 0; k < n_previous; ++k) {
      const std::int32_t id = previous[k];
      if (id < 0 || id >= vocab || seen_[std::size_t(id)]) continue;  // torch.unique: once per distinct id
      seen_[std::size_t(id)] = 1;
      double& x = work_[std::size_t(id)];
      x = x < 0.0 ? x * pen : x / pen;
    }
  }

  std::int32_t argmax() const {
    std::size_t best = 0;
    for (std::size_t i = 1; i < work_.size(); ++i)
      if (work_[i] > work_[best]) best = i;
    return std::int32_t(best);
  }

  // Temperature, softmax, top-k, top-p, min-p and renormalisation of work_, in place.
  void filter() {
    const std::size_t n = work_.size();
    const double t = params_.temperature;
    if (t != 1.0)
      for (double& x : work_) x /= t;
    const double mx = *std::max_element(work_.begin(), work_.end());
    MUNINN_CHECK(mx != -HUGE_VAL, "sampling: every logit is -inf");
    double sum = 0.0;
    for (double& x : work_) sum += (x = std::exp(x - mx));
    for (double& x : work_) x /= sum;

    if (params_.top_k > 0 && std::size_t(params_.top_k) < n) {
      // torch.where(probs < kth_value, 0, probs): tokens tied with the k-th are kept.
      order_values_.assign(work_.begin(), work_.end());
      const auto kth = order_values_.begin() + (params_.top_k - 1);
      std::nth_element(order_values_.begin(), kth, order_values_.end(), std::greater<double>());
      const double threshold = *kth;
      for (double& x : work_)
        if (x < threshold) x = 0.0;
    }

    if (params_.top_p < 1.0f) {
      // (probability, id) pairs sort faster than ids compared through work_; ties go to the lower id.
      order_.clear();
      for (std::size_t i = 0; i < n; ++i)
        if (work_[i] > 0.0) order_.emplace_back(work_[i], std::int32_t(i));
      const auto before = [](const std::pair<double, std::int32_t>& a, const std::pair<double, std::int32_t>& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      };
      // The nucleus is usually a small head of the vocabulary: sort a growing prefix instead of everything.
      const double top_p = params_.top_p;
      const std::size_t m = order_.size();
      for (std::size_t k = std::min<std::size_t>(m, 256);; k = std::min(m, 8 * k)) {
        std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(k), order_.end(), before);
        double cum = 0.0;
        std::size_t cut = m;
        for (std::size_t r = 0; r < k; ++r) {
          cum += order_[r].first;
          if (r > 0 && cum > top_p) {
            cut = r;
            break;
          }
        }
        if (cut < m) {
          for (std::size_t q = cut; q < m; ++q) work_[std::size_t(order_[q].second)] = 0.0;
          break;
        }
        if (k == m) break;
      }
    }

    if (params_.min_p > 0.0f) {
      const double threshold = double(params_.min_p) * *std::max_element(work_.begin(), work_.end());
      for (double& x : work_)
        if (x < threshold) x = 0.0;
    }

    double total = 0.0;
    for (double x : work_) total += x;
    total = std::max(total, 1e-10);
    for (double& x : work_) x /= total;
  }

  sampling_params params_;
  std::mt19937_64 rng_;
  std::vector<double> work_;          // logits, then probabilities
  std::vector<double> order_values_;  // scratch for top-k
  std::vector<std::pair<double, std::int32_t>> order_;  // scratch for top-p
  std::vector<char> seen_;            // scratch for the repetition penalty
};

}  // namespace muninn
