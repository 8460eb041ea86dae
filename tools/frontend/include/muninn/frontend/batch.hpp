#pragma once
/// \file
/// \brief Continuous batching behind one interface: a batch engine holds the requests of a
/// server's running batch, each with its own KV cache, sampler and options, and advances all of
/// them by one token boundary per `step()`. Requests join (`add`) and leave (`remove`, or when
/// they finish) between steps, so a scheduler keeps the batch full while streams of different
/// lengths — and, for recurrent-depth models, tokens of different depths — share every step.
///
/// Each family implements it on the library's batched forward passes: fixed-depth and plain
/// decoders stack one row per request (and chunks of new prompts) into one `forward_batch`;
/// Mixture-of-Recursions decodes through the depth-wise scheduler; Huginn with an exit criterion
/// through a pool in which a token that exits frees its row for another request's token within
/// the same step; CALM stacks one chunk position per request. Whatever the batch, a request
/// produces the tokens it produces alone (greedy and seeded sampling).

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/frontend/options.hpp"

namespace muninn::frontend {

/// \brief Sizes of a batch engine.
struct batch_limits {
  std::int64_t max_requests = 16;     ///< requests held at once (each holds its KV cache)
  std::int64_t prefill_tokens = 64;   ///< prompt tokens fed per step, over all requests being prefilled
  std::int64_t context = 0;           ///< positions one request may hold (0: the model's context)
  bool by_depth = true;               ///< schedule tokens by depth where the family can (false: rows step together)
};

/// \brief What one request did in a step.
struct batch_output {
  std::int64_t id = 0;                ///< the request (as add returned it)
  std::vector<std::int32_t> tokens;   ///< tokens that became final in this step, in order
  std::vector<std::int32_t> steps;    ///< per token: recurrence steps (Huginn), recursions (MoR), head samples (CALM)
  bool finished = false;              ///< the request is done and has left the engine
  std::string stop_reason;            ///< when finished: "length" or "stop" (an end-of-sequence or stop id)
};

/// \brief Work of the last step, for metrics.
struct batch_step_stats {
  std::int64_t requests = 0;        ///< requests the step advanced
  std::int64_t rows = 0;            ///< token rows the step computed (prompt tokens included)
  std::int64_t prefill_tokens = 0;  ///< of which prompt tokens
  std::int64_t layer_rows = 0;      ///< rows × recurrence steps (or recursions) the step ran, 0 when not tracked
};

/// \brief The requests of a running batch on one model. Not thread-safe: one scheduler thread
/// owns it (and the model); `check` alone may be called from other threads.
class batch_engine {
 public:
  virtual ~batch_engine() = default;
  /// \brief Validates a request without touching the engine: its options (operation::generate),
  /// its prompt ids and prompt + `max-new-tokens` against the context. Usage errors name the
  /// option as `o` spells it. Safe to call from any thread.
  virtual void check(const std::vector<std::int32_t>& prompt, const option_values& o) const = 0;
  /// \brief Adds a request (checked as by `check`) and allocates its KV cache; it runs from the
  /// next step on. `stops` end it too (with the model's end-of-sequence ids when the caller wants
  /// them). Returns its id.
  virtual std::int64_t add(const std::vector<std::int32_t>& prompt, const option_values& o,
                           const std::vector<std::int32_t>& stops) = 0;
  /// \brief Advances every request by one token boundary: a prefill chunk for a request that is
  /// still reading its prompt, the next token for the others (a recurrent-depth request whose
  /// token is still recurring may produce none). Finished requests leave the engine.
  virtual std::vector<batch_output> step() = 0;
  /// \brief Ends a request now (a client that went away, a stop string, a timeout): its row and
  /// KV cache are freed. Unknown ids are ignored.
  virtual void remove(std::int64_t id) = 0;
  /// \brief Requests held.
  virtual std::int64_t size() const = 0;
  /// \brief What the last step computed.
  virtual const batch_step_stats& last_step() const = 0;
};

}  // namespace muninn::frontend
