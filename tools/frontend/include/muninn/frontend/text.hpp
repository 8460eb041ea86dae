#pragma once
/// \file
/// \brief Text in and out of a loaded model as transformers does it: prompts encoded with the
/// checkpoint's tokenizer.json, chat templates from `chat_template.jinja` or
/// `tokenizer_config.json`, generation ended at the end-of-sequence ids of
/// `generation_config.json` / `config.json`.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "muninn/frontend/model.hpp"

namespace muninn::frontend {

/// \brief One chat message: role ("system", "user", "assistant") and content.
using chat_turn = std::pair<std::string, std::string>;

/// \brief The chat template of the checkpoint folder `dir` rendered for `messages` with the
/// generation prompt: `dir`/chat_template.jinja when present (transformers ≥ 4.43 writes it
/// there), else the "chat_template" of `dir`/tokenizer_config.json. A usage error names both
/// files when neither has one (`flag`: the option that asked for a chat).
std::string render_chat(const std::string& dir, const std::vector<chat_turn>& messages, const std::string& flag);

/// \brief `text` encoded with the model's tokenizer as a prompt (with the special tokens its
/// post-processor adds when the family encodes prompts so); usage errors name `flag`.
std::vector<std::int32_t> encode_prompt(const loaded_model& m, const std::string& dir, const std::string& text,
                                        const std::string& flag);

/// \brief A rendered chat encoded as it is (the template writes any BOS itself).
std::vector<std::int32_t> encode_rendered(const loaded_model& m, const std::string& dir, const std::string& rendered,
                                          const std::string& flag);

/// \brief `text` encoded with the model's tokenizer, with or without its post-processor's special
/// tokens (the model must have a tokenizer).
std::vector<std::int32_t> encode_text(const loaded_model& m, const std::string& text, bool add_special);

/// \brief Decodes ids with the model's tokenizer (special tokens kept).
std::string decode(const loaded_model& m, const std::vector<std::int32_t>& ids);

/// \brief The end-of-sequence ids of `dir`: generation_config.json's "eos_token_id" (an id or a
/// list), else config.json's; empty when neither has one. Ids outside [0, vocab) are a config error.
std::vector<std::int32_t> read_eos_ids(const std::string& dir, std::int64_t vocab);

}  // namespace muninn::frontend
