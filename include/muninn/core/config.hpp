#pragma once
/// \file
/// \brief Run-time sizes of a model, read from a checkpoint's config.json.

#include <cstdint>
#include <string>
#include <vector>

namespace muninn {

/// \brief Mixture-of-Recursions settings (families::mor): which tokens take how many recursions
/// of the shared block. Other families leave `recursions` at 0.
struct mor_settings {
  std::int64_t recursions = 0;          ///< Nr, recursions of the shared block
  std::string sharing = "middle_cycle"; ///< cycle | middle_cycle (sequence strategies have no per-recursion block)
  std::string type = "expert";          ///< "expert" (expert-choice) or "token" (token-choice) routing
  std::string router_type = "linear";   ///< "linear" or "mlp" (Linear d→2d, GELU, Linear 2d→out)
  std::string router_func = "sigmoid";  ///< expert: sigmoid | tanh | none; token: softmax | sigmoid
  double alpha = 0.1;                   ///< gate scale α
  std::vector<double> capacity;         ///< expert: share of candidates kept at each recursion (non-increasing)
  double temp = 1.0;                    ///< router input divisor
  bool router_bias = false;             ///< token: a loss-free balancing bias enters the choice (not the gate)
  bool kv_sharing = false;              ///< recursions ≥ 1 reuse recursion 0's keys and values
};

/// \brief The numbers that size a model. Structure (which block, which router...) is compile time;
/// everything here is run time, read from config.json by `io::read_model_config`.
struct model_config {
  std::string model_type = "huginn_raven";  ///< config.json "model_type"
  std::int64_t n_embd = 0;                  ///< hidden size h ("n_embd" / "hidden_size")
  std::int64_t n_heads = 0;                 ///< query heads ("num_attention_heads" / "n_heads")
  std::int64_t n_kv_heads = 0;              ///< key/value heads (MHA: equal to n_heads)
  std::int64_t head_dim = 0;                ///< n_embd / n_heads unless given
  std::int64_t intermediate_size = 0;       ///< gated MLP inner width (fc outputs twice this)
  std::int64_t vocab_size = 0;              ///< rows of the embedding ("padded_vocab_size" wins if present)
  std::int64_t n_layers_in_prelude = 0;     ///< blocks run once before the recurrence
  std::int64_t n_layers_in_recurrent_block = 0;  ///< blocks of the core, repeated each recurrence step
  std::int64_t n_layers_in_coda = 0;        ///< blocks run once after the recurrence
  std::int64_t mean_recurrence = 0;         ///< default number of recurrence steps
  std::int64_t block_size = 0;              ///< longest sequence (RoPE table length)
  float norm_eps = 1e-6f;                   ///< RMSNorm epsilon
  float rope_base = 50000.0f;               ///< RoPE theta
  float init_scale = 1.0f;                  ///< multiplies the random state's std
  float init_std = 0.0f;                    ///< init_values["std"] of the random state; 0: sqrt(2 / (5 n_embd))
  bool qk_bias = true;                      ///< learned per-head bias on q and k
  bool bias = false;                        ///< bias on Linear layers (unsupported when true)
  bool tie_embeddings = true;               ///< LM head reuses the embedding matrix
  std::string injection_type = "linear";   ///< "linear" (concat adapter) or "add"
  std::string block_type = "sandwich";     ///< Muninn extension: "sandwich" (Huginn) or "pre_norm"
  // Hugging Face Llama fields (families::llama); Huginn checkpoints leave them at these defaults.
  std::string rope_type = "default";        ///< rope_scaling type: "default" (none), "linear" or "llama3"
  float rope_factor = 1.0f;                 ///< rope_scaling "factor" (linear and llama3)
  float rope_low_freq_factor = 1.0f;        ///< llama3 "low_freq_factor"
  float rope_high_freq_factor = 4.0f;       ///< llama3 "high_freq_factor"
  std::int64_t rope_original_max_position = 0;  ///< llama3 "original_max_position_embeddings"
  bool attention_bias = false;              ///< biases on the v and o projections too (q, k: `qk_bias`)
  bool mlp_bias = false;                    ///< biases on the gate, up and down projections
  mor_settings mor;                         ///< Mixture-of-Recursions settings (families::mor)
  std::string source;                       ///< file the config was read from, for error messages

  /// \brief Layers in prelude + core + coda (the unique blocks stored in the checkpoint).
  std::int64_t n_unique_layers() const {
    return n_layers_in_prelude + n_layers_in_recurrent_block + n_layers_in_coda;
  }
};

}  // namespace muninn
