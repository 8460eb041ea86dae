#pragma once
// `muninn eval --metric brierlm`: BrierLM of a checkpoint on a token stream (docs/brierlm.md).
//
// The protocol (stream, blocks, per-block means averaged, output) is shared; each family brings
// its block estimator. Softmax families (Huginn, Llama, Mixture-of-Recursions) use
// model_brier_block through eval_with; a family without next-token probabilities (CALM) calls
// run_brierlm with its own `estimate(block, draws) -> brier_accumulator`.

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "commands.hpp"
#include "muninn/runtime/brier.hpp"

namespace muninn::cli {

/// \brief The evaluation stream of `--data FILE`: every document (line) in file order,
/// concatenated with nothing inserted. Lines of ids are taken as they are; text lines and the
/// "text" of JSON lines are encoded with DIR/tokenizer.json as transformers' `tokenizer(text)`
/// does by default (with the post-processor's special tokens, e.g. a Llama 3 BOS per document).
inline std::vector<std::int32_t> eval_stream(const std::string& file, const std::string& dir) {
  std::vector<std::int32_t> stream;
  for (const auto& doc : score_sequences(file, dir, true, true)) stream.insert(stream.end(), doc.begin(), doc.end());
  return stream;
}

/// \brief --metric, --block-size, --max-blocks, --seed; the block must fit the model's context
/// (`context` positions): BrierLM depends on the block size, so it is never clamped.
inline brierlm_options brierlm_options_from(const args& a, std::int64_t context) {
  const std::string metric = a.require("--metric");
  MUNINN_CHECK(metric == "brierlm", "--metric must be brierlm, got '", metric, "'");
  brierlm_options o;
  o.block_size = a.get_int_min("--block-size", 8192, 5);
  MUNINN_CHECK(o.block_size <= context, "--block-size ", o.block_size, a.has("--block-size") ? "" : " (the default)",
               " exceeds the model's context of ", context,
               " positions: give --block-size ", context,
               " or less (BrierLM depends on the block size, so it is not clamped)");
  o.max_blocks = a.has("--max-blocks") ? a.get_int_min("--max-blocks", 0, 1) : 0;
  o.seed = std::uint64_t(a.get_int_min("--seed", 0, 0));
  return o;
}

/// \brief "brier1=... brier2=... brier3=... brier4=..." (9 decimals).
inline std::string brier_line(const brier_values& b) {
  std::string s;
  char buf[64];
  for (int n = 1; n <= brier_max_n; ++n) {
    std::snprintf(buf, sizeof buf, "%sbrier%d=%.9f", n > 1 ? " " : "", n, b[std::size_t(n - 1)]);
    s += buf;
  }
  return s;
}

/// \brief "brierlm=..." (×100, 6 decimals).
inline std::string brierlm_line(double brierlm) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "brierlm=%.6f", brierlm);
  return buf;
}

/// \brief Runs the protocol with a family's block estimator and prints the result:
///   metric=brierlm blocks=B block_size=N tokens=T dropped=D seed=S
///   block b: brier1=... brier4=... brierlm=...     (one per block, with --verbose)
///   brier1=... brier2=... brier3=... brier4=...
///   brierlm=...
template <class BlockEstimator>
int run_brierlm(const args& a, const std::vector<std::int32_t>& stream, brierlm_options o, BlockEstimator&& estimate) {
  const std::int64_t nb = brier_block_count(std::int64_t(stream.size()), o.block_size, o.max_blocks);
  MUNINN_CHECK(nb > 0, "--data holds ", stream.size(), " tokens, fewer than one block of --block-size ", o.block_size,
               " (the remainder after the last whole block is dropped)");
  std::cout << "metric=brierlm blocks=" << nb << " block_size=" << o.block_size << " tokens=" << stream.size()
            << " dropped=" << std::int64_t(stream.size()) - nb * o.block_size << " seed=" << o.seed << "\n"
            << std::flush;
  if (a.has("--verbose"))
    o.on_block = [](std::int64_t b, const brier_values& m) {
      std::cout << "block " << b << ": " << brier_line(m) << " " << brierlm_line(brierlm_of(m)) << "\n" << std::flush;
    };
  const brierlm_result r = evaluate_brierlm(stream, o, std::forward<BlockEstimator>(estimate));
  std::cout << brier_line(r.brier) << "\n" << brierlm_line(r.brierlm) << "\n";
  return 0;
}

/// \brief `muninn eval` on a loaded softmax model (Huginn, Llama, Mixture-of-Recursions).
/// A Mixture-of-Recursions model routes by the causal rule: the estimator decodes rollouts, and
/// only under that rule is a teacher-forced pass the same model as decoding.
template <class Model>
int eval_with(const Model& m, const args& a, const std::string& dir) {
  const brierlm_options o = brierlm_options_from(a, m.config().block_size);
  run_options run = run_options_from(a, m.config());
  run.routing = routing_mode::causal;
  const std::vector<std::int32_t> stream = eval_stream(a.require("--data"), dir);
  const std::int64_t V = m.config().vocab_size;
  for (std::size_t i = 0; i < stream.size(); ++i)
    MUNINN_CHECK(stream[i] >= 0 && stream[i] < V, "--data: token id ", stream[i], " (token ", i,
                 " of the stream) is out of range for vocab_size ", V);
  return run_brierlm(a, stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    return model_brier_block(m, block, run, d);
  });
}

}  // namespace muninn::cli
