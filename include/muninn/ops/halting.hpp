#pragma once
/// \file
/// \brief Exit-decision ops of the built-in halting criteria: how far each row's state moved, and
/// one decision per row from its statistic and running state (a byte mask, the only thing a
/// decision sends to the host).

#include <cstdint>

#include "muninn/backend/host.hpp"
#include "muninn/core/error.hpp"
#include "muninn/ops/halt_math.hpp"

namespace muninn {

/// \brief For each row: rel[r] = ‖x_r − p_r‖ / ‖x_r‖ and cos_dist[r] = 1 − cos(x_r, p_r), sums in double.
/// \param be       the host backend
/// \param x        new states [rows, h]
/// \param p        previous states [rows, h]
/// \param rows     rows
/// \param h        width
/// \param rel      output [rows] (latent-diff statistic)
/// \param cos_dist output [rows] (cosine statistic)
inline void latent_change_rows(const host_backend& be, const float* x, const float* p, std::int64_t rows,
                               std::int64_t h, float* rel, float* cos_dist) {
  MUNINN_CHECK(rows >= 0 && h > 0, "latent_change_rows: bad shape rows=", rows, " h=", h);
  be.parallel_for(rows, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      double d2 = 0, x2 = 0, p2 = 0, xp = 0;
      for (std::int64_t i = 0; i < h; ++i) {
        const double xi = x[r * h + i], pi = p[r * h + i];
        d2 += (xi - pi) * (xi - pi);
        x2 += xi * xi;
        p2 += pi * pi;
        xp += xi * pi;
      }
      rel[r] = detail::relative_change(d2, x2);
      cos_dist[r] = detail::cosine_distance(xp, x2, p2);
    }
  });
}

/// \brief Decides each row's exit: mask[r] = 1 when row r exits (`detail::halt_decide_row`).
/// \param be          the host backend
/// \param kind        how the statistic decides
/// \param stat        the rows' new statistic [rows] (unused for argmax_run; may be nullptr)
/// \param argmax      the rows' new arg-max [rows] (argmax_run only; else may be nullptr)
/// \param prev_stat   running previous statistic [rows] (entropy_change), updated
/// \param prev_argmax running previous arg-max [rows] (argmax_run), updated
/// \param count       running count of equal arg-maxes [rows] (argmax_run), updated
/// \param rows        rows
/// \param threshold   the criterion's threshold
/// \param mask        output [rows], 1 = exit
inline void halt_decide(const host_backend& be, halt_rule_kind kind, const float* stat, const std::int32_t* argmax,
                        float* prev_stat, std::int32_t* prev_argmax, std::int32_t* count, std::int64_t rows,
                        double threshold, std::uint8_t* mask) {
  (void)be;
  MUNINN_CHECK(rows >= 0, "halt_decide: negative rows ", rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    float ps = prev_stat ? prev_stat[r] : 0.0f;
    std::int32_t pa = prev_argmax ? prev_argmax[r] : 0, c = count ? count[r] : 0;
    mask[r] = detail::halt_decide_row(kind, stat ? stat[r] : 0.0f, argmax ? argmax[r] : 0, ps, pa, c, threshold);
    if (prev_stat) prev_stat[r] = ps;
    if (prev_argmax) prev_argmax[r] = pa;
    if (count) count[r] = c;
  }
}

/// \brief Decides each sample's Q halt from its Q-head logits: mask[r] = 1 when sample r halts
/// (`detail::q_halt_row`). Only the mask needs to reach the host.
/// \param be        the host backend
/// \param q         Q-head logits [rows, 2]: q_halt, q_continue
/// \param rows      samples
/// \param kind      the rule
/// \param threshold the bound of q_halt_kind::above
/// \param mask      output [rows], 1 = halt
inline void q_halt_decide(const host_backend& be, const float* q, std::int64_t rows, q_halt_kind kind, float threshold,
                          std::uint8_t* mask) {
  (void)be;
  MUNINN_CHECK(rows >= 0, "q_halt_decide: negative rows ", rows);
  for (std::int64_t r = 0; r < rows; ++r) mask[r] = detail::q_halt_row(kind, q[2 * r], q[2 * r + 1], threshold);
}

}  // namespace muninn
