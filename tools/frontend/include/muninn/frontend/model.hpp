#pragma once
/// \file
/// \brief A loaded model of any family behind one interface: what every front end (the `muninn`
/// CLI, a Python module, a server) calls, so that none of them instantiates a model template or
/// switches on a family. Each family's adapter lives in its own translation unit of the
/// `muninn_frontend` library (src/<family>.cpp), compiled once.
///
/// Calls on one loaded_model must not overlap (a server's scheduler thread owns its model);
/// distinct loaded_models are independent. Errors are muninn::error with a kind() (usage,
/// config, checkpoint, runtime) for a front end to map.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "muninn/frontend/batch.hpp"
#include "muninn/frontend/options.hpp"
#include "muninn/model/taps.hpp"

namespace muninn::io {
class tokenizer;
}

namespace muninn::frontend {

/// \brief One line of `info`: a label ("parameters") and its value.
struct info_field {
  std::string label;
  std::string value;
};

/// \brief What `info` shows, with the same labels for every family where they apply.
struct model_info {
  std::string family;   ///< registry name: "huginn", "llama", "mor", "calm", "trm"
  std::string display;  ///< "Huginn", "Llama", "Mixture-of-Recursions", "CALM", "TRM"
  std::string path;     ///< the folder (or step file) it was loaded from
  std::vector<info_field> fields;  ///< in print order
  std::int64_t vocab_size = 0;     ///< tokens
  std::int64_t context = 0;        ///< positions in tokens (0: no limit that applies)
  std::int64_t parameters = 0;     ///< unique parameters
};

/// \brief Progress of a long call: `done` of `total` units (blocks, sequences, puzzles).
using progress_fn = std::function<void(std::int64_t done, std::int64_t total)>;

/// \brief A named observation point of a forward pass that a model offers (a tap): what a caller
/// can ask forward() to hand back beside the logits.
struct tap_spec {
  std::string name;  ///< "trajectory"
  std::string help;  ///< one line: what it holds and its shape
};

/// \brief The values of one tap, row-major with their shape: float values (states) or integer
/// values (counts); the other vector is empty.
struct tap_value {
  std::vector<std::int64_t> shape;
  std::vector<float> f32;
  std::vector<std::int32_t> i32;
};

/// \brief Logits of every position of one forward pass.
struct forward_result {
  std::vector<float> logits;          ///< [rows, vocab]
  std::int64_t rows = 0;              ///< positions
  std::int64_t vocab = 0;             ///< V
  std::int64_t steps = -1;            ///< recurrence depth used (-1: not a recurrent model)
  std::vector<std::int32_t> depths;   ///< recursions or steps each position ran (routed and recurrent models)
  std::map<std::string, tap_value> taps;  ///< the taps the caller asked for, by name
  std::vector<std::string> notes;         ///< one-line reports for a log (files written by --dump)
};

/// \brief Streaming and cancellation of a generation.
struct generate_callbacks {
  /// Called with the tokens that became final since the last call (one for a plain decoder, K
  /// for CALM), in order, as soon as they are; may be empty.
  std::function<void(const std::vector<std::int32_t>& tokens)> on_tokens;
  /// Polled before each new token or chunk; true ends the generation there (stop_reason "cancelled").
  std::function<bool()> cancelled;
};

/// \brief What a generation produced.
struct generation {
  std::vector<std::int32_t> tokens;  ///< the new tokens ([PAD] removed for CALM)
  std::vector<std::int32_t> steps;   ///< recurrence steps per token (Huginn) or head samples per chunk (CALM)
  std::vector<std::int32_t> depths;  ///< recursions each position ran (Mixture-of-Recursions)
  std::string stop_reason;           ///< "length", "eos", "stop", "cancelled"
  std::vector<std::string> notes;    ///< one-line reports for a log (KV cache use, speculative decoding)
};

/// \brief Mean next-token negative log-likelihood of sequences.
struct score_result {
  std::int64_t sequences = 0, tokens = 0, predicted = 0;
  double nll = 0;                         ///< mean over predicted tokens
  std::vector<std::int64_t> depth_counts;  ///< [d]: tokens that ran d recursions (routed models; empty otherwise)
  std::string routing;                    ///< "scoring" or "causal" (routed models)
};

/// \brief Brier-1 … Brier-4.
using brier4 = std::array<double, 4>;

/// \brief A BrierLM evaluation (docs/brierlm.md) as run.
struct brier_report {
  std::int64_t block_size = 0;   ///< tokens per teacher-forced block
  std::int64_t blocks = 0;       ///< whole blocks evaluated
  std::int64_t tokens = 0;       ///< tokens in the stream
  std::uint64_t seed = 0;        ///< seed of the estimator's draws
  brier4 brier{};                ///< per-block means averaged over blocks
  double brierlm = 0;            ///< 100 · max(b1·b2·b3·b4, 0)^(1/4)
};

/// \brief Called after each BrierLM block with its index, the number of blocks and its means
/// (progress, --verbose).
using brier_block_fn = std::function<void(std::int64_t block, std::int64_t blocks, const brier4& means)>;

class calm_extras;
class trm_extras;

/// \brief A model of any family, loaded. Operations a family does not run throw a usage error
/// that names the command that does (registry.hpp's family table says which).
class loaded_model {
 public:
  virtual ~loaded_model() = default;
  /// \brief What `info` prints.
  virtual const model_info& info() const = 0;
  /// \brief The checkpoint's tokenizer.json, or nullptr when it has none.
  virtual const io::tokenizer* tokenizer() const { return nullptr; }
  /// \brief Whether text is encoded with the tokenizer's special tokens by default (a Llama
  /// tokenizer's BOS; Huginn's post-processor appends an end-of-text a prompt must not get).
  virtual bool prompt_adds_special_tokens() const { return false; }
  /// \brief Token ids that end a generation by default (generation_config.json / config.json).
  virtual std::vector<std::int32_t> eos_ids() const { return {}; }

  /// \brief The taps forward() can hand back for this model (empty: none).
  virtual std::vector<tap_spec> taps() const { return {}; }

  /// \brief One forward pass over `ids` (options of operation::forward), with the named `taps`
  /// (each one of taps(); a usage error names an unknown one and lists the rest).
  virtual forward_result forward(const std::vector<std::int32_t>& ids, const option_values& o,
                                 const std::vector<std::string>& taps = {}) const;
  /// \brief Forward passes over several sequences of any lengths: each result is what forward()
  /// gives that sequence alone. Batched where the family can (each weight read once per call).
  virtual std::vector<forward_result> forward_batch(const std::vector<std::vector<std::int32_t>>& seqs,
                                                    const option_values& o,
                                                    const std::vector<std::string>& taps = {}) const;
  /// \brief Generates from `prompt` (options of operation::generate); `stop_ids` end it too.
  virtual generation generate(const std::vector<std::int32_t>& prompt, const option_values& o,
                              const std::vector<std::int32_t>& stop_ids, const generate_callbacks& cb) const;
  /// \brief Generations of several prompts with the same options `o` (batched where the family
  /// can; the same tokens as one at a time); `stop_ids` end each row.
  virtual std::vector<generation> generate_batch(const std::vector<std::vector<std::int32_t>>& prompts,
                                                 const option_values& o,
                                                 const std::vector<std::int32_t>& stop_ids = {}) const;
  /// \brief Mean next-token NLL of `sequences` (options of operation::score).
  virtual score_result score(const std::vector<std::vector<std::int32_t>>& sequences, const option_values& o,
                             const progress_fn& progress) const;
  /// \brief BrierLM on `stream` (options of operation::eval); `on_block` after each block.
  virtual brier_report brierlm(const std::vector<std::int32_t>& stream, const option_values& o,
                               const brier_block_fn& on_block) const;

  /// \brief A batch engine for serving (continuous batching, batch.hpp): requests with options
  /// of operation::generate join and leave it between steps. The engine holds a reference to this
  /// model, which must outlive it; while it runs, no other call may use the model.
  virtual std::unique_ptr<batch_engine> batch(const batch_limits& limits) const;

  /// \brief CALM's chunk autoencoder and sampler, or nullptr.
  virtual const calm_extras* calm() const { return nullptr; }
  /// \brief TRM / HRM's puzzle solver, or nullptr.
  virtual trm_extras* trm() { return nullptr; }

 protected:
  /// \brief The usage error for an operation this family does not run.
  [[noreturn]] void not_run(operation op) const;
  /// \brief A usage error for a name in `names` that taps() does not list.
  void check_taps(const std::vector<std::string>& names) const;
};

/// \brief The ids that end a generation of `m` under options `o` (operation::generate): the
/// `stop` option's ids, then the model's end-of-sequence ids unless `ignore-eos` is given.
std::vector<std::int32_t> stop_ids(const loaded_model& m, const option_values& o);

/// \brief CALM's extras: the chunk autoencoder (`muninn ae`). Ids are checked against the
/// vocabulary and latents for their size (usage errors naming `what` and the index).
class calm_extras {
 public:
  virtual ~calm_extras() = default;
  /// \brief Chunk size K.
  virtual std::int64_t patch_size() const = 0;
  /// \brief Latent size l of one chunk.
  virtual std::int64_t latent_size() const = 0;
  /// \brief Encodes `ids` (a whole number of chunks) and decodes each chunk's mean back to ids.
  virtual std::vector<std::int32_t> reconstruct(const std::vector<std::int32_t>& ids) const = 0;
  /// \brief Encodes `ids` (a whole number of chunks n): [n, 2l], each row the mean (l values)
  /// then log σ (l values) of the chunk's latent.
  virtual std::vector<float> encode(const std::vector<std::int32_t>& ids) const = 0;
  /// \brief The decoder's logits [n·K, V] for latents `z` [n, l].
  virtual std::vector<float> decode_logits(const std::vector<float>& z) const = 0;
  /// \brief The decoder's token ids [n·K] (arg-max of each token's logits) for latents `z` [n, l].
  virtual std::vector<std::int32_t> decode(const std::vector<float>& z) const = 0;
  /// \brief The pad id that fills a last partial chunk (-1: none).
  virtual std::int64_t pad_id() const = 0;
  /// \brief Where the autoencoder's config came from (for messages).
  virtual const std::string& autoencoder_source() const = 0;
  /// \brief `ids` with a last partial chunk filled up with pad_id() (a usage error when the
  /// config has none).
  std::vector<std::int32_t> padded(std::vector<std::int32_t> ids) const;
};

/// \brief When a TRM / HRM sample stops.
struct trm_halt_choice {
  bool learned = false;       ///< false: every sample runs max_steps; true: the Q head decides
  std::int64_t max_steps = 0;  ///< supervision steps (at most); 0 takes the config's halt_max_steps
  bool use_threshold = false;  ///< learned halting by q_halt > threshold instead of the run's rule
  double threshold = 0;
};

/// \brief One supervision step's outputs for the samples still running.
struct trm_step_view {
  std::int64_t step = 0;                        ///< 1-based
  const std::vector<std::int64_t>* samples = nullptr;  ///< batch index of each row
  const std::vector<float>* logits = nullptr;   ///< [rows, seq_len, vocab]
  const std::vector<float>* q_halt = nullptr;   ///< [rows]
  const std::vector<float>* q_continue = nullptr;  ///< [rows] (empty when the model has no continue head)
};

/// \brief What a solve returns per sample: steps used, predictions and the last step's logits.
struct trm_solution {
  std::vector<std::int32_t> steps;  ///< [B]
  std::vector<std::int32_t> preds;  ///< [B, seq_len]
  std::vector<float> logits;        ///< [B, seq_len, vocab]
};

/// \brief TRM / HRM's extras: run puzzles under a halting rule.
class trm_extras {
 public:
  virtual ~trm_extras() = default;
  virtual std::int64_t seq_len() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t puzzle_identifiers() const = 0;  ///< rows of the puzzle table
  virtual std::int64_t halt_max_steps() const = 0;
  virtual std::string halt_rule_name() const = 0;       ///< "q_halt > 0" or "q_halt > q_continue"
  virtual std::string describe() const = 0;              ///< "trm (attention), N parameters, checkpoint step_N"
  virtual std::string config_source() const = 0;         ///< where the sizes came from (for messages)
  /// \brief The run's dataset folder, found from all_config.yaml's data path as the loader finds
  /// it (from the run folder up through its parents); a config error when it is not there.
  virtual std::string dataset_dir() const = 0;
  /// \brief The taps of the streams within a supervision step: z_L.cycle.T.J and z_H.cycle.T
  /// for every outer cycle T and inner update J (docs/taps.md).
  virtual std::vector<std::string> stream_taps() const = 0;
  /// \brief Solves a batch: `inputs` [B, seq_len], `puzzle_ids` [B]; `on_step` after every step;
  /// `taps` receives the streams after each update (stream_taps(); tap_event::sequences holds
  /// each row's index in the batch).
  virtual trm_solution solve(const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& puzzle_ids,
                             const trm_halt_choice& halt, const std::function<void(const trm_step_view&)>& on_step = {},
                             const tap_options& taps = {}) = 0;
};

}  // namespace muninn::frontend
