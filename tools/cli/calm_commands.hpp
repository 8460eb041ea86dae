#pragma once
// The CALM side of the muninn tool: `muninn ae` (the chunk autoencoder alone), and `info` and
// `generate` on a CALM checkpoint, which is not a model<> instantiation (a step emits K tokens).

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "commands.hpp"
#include "specs.hpp"
#include "muninn/families/calm/model.hpp"
#include "muninn/io/tokenizer.hpp"
#include "muninn/runtime/calm_brier.hpp"
#include "muninn/runtime/calm_generate.hpp"
#include "eval.hpp"

namespace muninn::cli {

/// \brief What kind of CALM directory `dir` is, from its config.json.
enum class calm_dir_kind { none, model, autoencoder };

/// \brief A CALM model directory, an autoencoder directory, or neither.
inline calm_dir_kind calm_kind_of(const std::string& dir) {
  const std::string path = io::config_json_path(dir);
  if (!std::filesystem::exists(path)) return calm_dir_kind::none;
  const io::json cfg = io::read_json_file(path);
  if (io::is_calm_config(cfg)) return calm_dir_kind::model;
  if (io::is_autoencoder_config(cfg)) return calm_dir_kind::autoencoder;
  return calm_dir_kind::none;
}

namespace detail {

inline std::vector<std::int32_t> calm_input_ids(const args& a, const std::string& tok_dir,
                                                std::optional<io::tokenizer>& tok) {
  MUNINN_CHECK(int(a.has("--tokens")) + int(a.has("--prompt")) == 1, "give exactly one of --tokens and --prompt");
  if (a.has("--tokens")) return args::parse_ids(a.get("--tokens"), "--tokens");
  const std::string path = tok_dir + "/tokenizer.json";
  MUNINN_CHECK(std::filesystem::exists(path), "--prompt needs a tokenizer: ", path, " does not exist");
  tok.emplace(io::tokenizer::from_file(path));
  auto ids = tok->encode(a.get("--prompt"), true);
  MUNINN_CHECK(!ids.empty(), "--prompt encodes to no tokens");
  return ids;
}

inline chunk_autoencoder<host_backend, float> open_autoencoder(const std::string& dir, const std::string& ae_dir) {
  if (calm_kind_of(dir) == calm_dir_kind::autoencoder) return chunk_autoencoder<host_backend, float>::load(dir);
  io::calm_files f = io::open_calm(dir, ae_dir);
  const io::checkpoint& ck = f.ae_embedded ? f.model : *f.ae;
  return chunk_autoencoder<host_backend, float>(host_backend{}, f.ae_config, ck,
                                                f.ae_embedded ? io::calm_embedded_ae_prefix : "");
}

}  // namespace detail

/// \brief `muninn ae`: reconstruct tokens through the autoencoder and report the token accuracy.
inline int run_ae(const args& a) {
  const std::string dir = a.require("--model");
  MUNINN_CHECK(calm_kind_of(dir) != calm_dir_kind::none, dir, "/config.json is neither a CALM autoencoder nor a CALM model");
  std::optional<io::tokenizer> tok;
  const std::vector<std::int32_t> ids = detail::calm_input_ids(a, dir, tok);
  chunk_autoencoder<host_backend, float> ae = detail::open_autoencoder(dir, a.get("--ae", ""));
  const autoencoder_config& c = ae.config();
  std::vector<std::int32_t> padded = ids;
  if (padded.size() % std::size_t(c.patch_size)) {
    MUNINN_CHECK(c.pad_id >= 0, c.source, ": ", ids.size(), " tokens need padding to a multiple of ", c.patch_size,
                 " but the config has no pad_token_id");
    padded.resize((padded.size() / std::size_t(c.patch_size) + 1) * std::size_t(c.patch_size), std::int32_t(c.pad_id));
  }
  const std::vector<std::int32_t> back = ae.reconstruct(padded);
  std::size_t right = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) right += back[i] == ids[i];
  const std::vector<std::int32_t> shown(back.begin(), back.begin() + std::ptrdiff_t(ids.size()));
  if (tok) std::cout << tok->decode(shown) << "\n";
  std::cout << join_ids(shown) << "\n"
            << "accuracy=" << double(right) / double(ids.size()) << " (" << right << "/" << ids.size() << " tokens)\n";
  return 0;
}

/// \brief `muninn info` on a CALM directory.
inline int calm_info(const std::string& dir, const std::string& ae_dir) {
  calm_model<host_backend, float> m = calm_model<host_backend, float>::load(dir, ae_dir);
  const calm_config& c = m.config();
  const model_config& b = c.backbone;
  std::cout << "model:            " << dir << "\n"
            << "family:           calm (energy head; config.json has no model_type)\n"
            << "chunk:            " << c.patch_size << " tokens per step, latent " << c.latent_size << "\n"
            << "backbone:         Llama, " << b.n_layers_in_prelude << " layers, hidden " << b.n_embd << ", heads "
            << b.n_heads << " (kv " << b.n_kv_heads << "), mlp " << b.intermediate_size << "\n"
            << "energy head:      " << c.mlp_blocks << " blocks, noise " << c.noise_size << "\n"
            << "autoencoder:      hidden " << m.autoencoder().config().hidden_size << ", layers "
            << m.autoencoder().config().encoder_layers << "+" << m.autoencoder().config().decoder_layers << " ("
            << m.autoencoder().config().source << ")\n"
            << "vocab:            " << b.vocab_size << " (pad " << c.pad_id << ", eos " << c.eos_id << ")\n"
            << "max positions:    " << b.block_size << " chunks (" << b.block_size * c.patch_size << " tokens)\n"
            << "parameters:       " << m.parameter_count() << " (autoencoder " << m.autoencoder().parameter_count()
            << " apart)\n";
  return 0;
}

/// \brief `muninn generate` on a CALM directory: K tokens per step.
inline int calm_generate(const std::string& dir, const args& a) {
  std::optional<io::tokenizer> tok;
  const std::vector<std::int32_t> ids = detail::calm_input_ids(a, dir, tok);
  calm_model<host_backend, float> m = calm_model<host_backend, float>::load(dir, a.get("--ae", ""));
  calm_generate_options o;
  const std::int64_t K = m.patch_size();
  const std::int64_t padded = (std::int64_t(ids.size()) + K - 1) / K * K;
  o.max_length = padded + a.get_int_min("--max-new-tokens", 0, 0);
  o.temperature = a.get_double("--temperature", 1.0);
  const std::string sampler = a.get("--sampler", "approx");
  MUNINN_CHECK(sampler == "approx" || sampler == "exact", "--sampler for a CALM model is approx or exact, got '",
               sampler, "'");
  o.sampler = sampler == "exact" ? calm_sampler::exact : calm_sampler::approximate;
  o.num_samples = a.get_int_min("--num-samples", o.num_samples, 1);
  o.max_draws = a.get_int_min("--max-draws", o.max_draws, 1);
  o.seed = std::uint64_t(a.get_int_min("--seed", 0, 0));
  const calm_generation g = generate_calm(m, ids, o);
  const std::vector<std::int32_t> fresh(g.ids.begin() + std::ptrdiff_t(std::min(ids.size(), g.ids.size())), g.ids.end());
  if (tok) std::cout << tok->decode(fresh) << "\n";
  if (a.has("--show-steps")) {
    std::vector<std::int32_t> draws(g.draws.begin(), g.draws.end());
    std::cout << "head samples per step: " << join_ids(draws) << "\n";
  }
  std::cout << join_ids(fresh) << "\n";
  return 0;
}

/// \brief `muninn eval --metric brierlm` on a CALM directory: blocks of whole chunks, two head
/// samples per chunk position (runtime/calm_brier.hpp).
inline int calm_eval(const std::string& dir, const args& a) {
  calm_model<host_backend, float> m = calm_model<host_backend, float>::load(dir, a.get("--ae", ""));
  const std::int64_t K = m.patch_size();
  const brierlm_options o = brierlm_options_from(a, m.config().backbone.block_size * K);
  MUNINN_CHECK(o.block_size % K == 0, "--block-size ", o.block_size, " is not a multiple of the chunk size ", K);
  const std::vector<std::int32_t> stream = eval_stream(a.require("--data"), dir);
  const std::int64_t V = m.config().backbone.vocab_size;
  for (std::size_t i = 0; i < stream.size(); ++i)
    MUNINN_CHECK(stream[i] >= 0 && stream[i] < V, "--data: token id ", stream[i], " (token ", i,
                 " of the stream) is out of range for vocab_size ", V);
  return run_brierlm(a, stream, o, [&](const std::vector<std::int32_t>& block, const brier_draws& d) {
    return calm_brier_block(m, block, d);
  });
}

}  // namespace muninn::cli
