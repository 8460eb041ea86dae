#pragma once
// The JSON the server answers with, in the OpenAI wire format: completions and chat completions
// (whole or as stream chunks), usage with the model's extra fields, the model list and errors.

#include <cstdint>
#include <string>

#include "muninn/io/json.hpp"
#include "openai_request.hpp"

namespace muninn::server {

/// \brief What a finished (or streaming) request reports besides its text.
struct response_meta {
  std::string id;          ///< "cmpl-…" / "chatcmpl-…"
  std::int64_t created = 0;  ///< Unix seconds
  std::string model;       ///< the served model's id
};

/// \brief `usage`: prompt, completion and total tokens, the seed in force, the model options the
/// request gave, and the depth actually spent (`depth_field`: "recurrence_steps", "recursions" or
/// "head_samples"; empty for a plain decoder) as a total and a mean per token.
io::json usage_json(const parsed_request& r, std::int64_t completion_tokens, const std::string& depth_field,
                    std::int64_t depth_total);

/// \brief A whole response: `text_completion` or `chat.completion`.
io::json response_json(const parsed_request& r, const response_meta& meta, const std::string& text,
                       const std::string& finish_reason, io::json usage);

/// \brief One stream chunk: `text` (a chat's first chunk also carries the role), and the
/// finish_reason on the last one ("" while running).
io::json chunk_json(const parsed_request& r, const response_meta& meta, const std::string& text, bool first,
                    const std::string& finish_reason);

/// \brief The chunk a stream ends with when stream_options.include_usage is set: no choices, the usage.
io::json usage_chunk_json(const parsed_request& r, const response_meta& meta, io::json usage);

/// \brief An OpenAI error body: {"error": {"message", "type", "param", "code"}}.
io::json error_json(const std::string& message, const std::string& type, const std::string& code = "");

/// \brief GET /v1/models.
io::json models_json(const std::string& model, std::int64_t created);

}  // namespace muninn::server
