#pragma once
/// \file
/// \brief Run-time sizes of a prelude / core / coda layer stack: what every family's config has.

#include <cstdint>
#include <string>

namespace muninn {

/// \brief The numbers that size a model's layer stack. Structure (which block, which router...)
/// is compile time; everything here is run time.
///
/// Each family reads config.json into its own config type, which derives from this one and adds
/// what only that family reads (`huginn_config`, `llama_config`, `mor_config`; the FamilyPolicy's
/// `config_type`). The settings here are those of the stack and of the slots any family may fill
/// (the RMSNorm epsilon, the RoPE base, the random initial state).
struct model_config {
  std::string model_type;                   ///< config.json "model_type"
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
  float init_scale = 1.0f;                  ///< state_init::truncated_normal: multiplies the random state's std
  float init_std = 0.0f;                    ///< state_init::truncated_normal: the std before scaling; 0: sqrt(2 / (5 n_embd))
  bool qk_bias = true;                      ///< the layers have a learned bias on q and k
  bool tie_embeddings = true;               ///< LM head reuses the embedding matrix
  std::string source;                       ///< file the config was read from, for error messages

  /// \brief Layers in prelude + core + coda (the unique blocks stored in the checkpoint).
  std::int64_t n_unique_layers() const {
    return n_layers_in_prelude + n_layers_in_recurrent_block + n_layers_in_coda;
  }
};

}  // namespace muninn
