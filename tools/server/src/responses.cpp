// Response bodies in the OpenAI wire format, built with io::json_object_builder.

#include "responses.hpp"

#include "muninn/io/json_writer.hpp"

namespace muninn::server {

using io::json;
using io::json_object_builder;

json usage_json(const parsed_request& r, std::int64_t completion_tokens, const std::string& depth_field,
                std::int64_t depth_total) {
  json_object_builder u;
  const auto prompt_tokens = std::int64_t(r.prompt.size());
  u.add("prompt_tokens", prompt_tokens)
      .add("completion_tokens", completion_tokens)
      .add("total_tokens", prompt_tokens + completion_tokens)
      .add("seed", r.seed);
  for (const auto& [field, value] : r.echo)
    if (field != "seed" && field != "temperature" && field != "top_p") u.add(field, value);
  if (!depth_field.empty()) {
    u.add(depth_field, depth_total);
    u.add("mean_" + depth_field, completion_tokens ? double(depth_total) / double(completion_tokens) : 0.0);
  }
  return u.build();
}

json response_json(const parsed_request& r, const response_meta& meta, const std::string& text,
                   const std::string& finish_reason, json usage) {
  const bool chat = r.kind == endpoint::chat;
  json_object_builder choice;
  choice.add("index", 0);
  if (chat)
    choice.add("message", json_object_builder().add("role", "assistant").add("content", text).build());
  else
    choice.add("text", text).add("logprobs", json());
  choice.add("finish_reason", finish_reason);
  return json_object_builder()
      .add("id", meta.id)
      .add("object", chat ? "chat.completion" : "text_completion")
      .add("created", meta.created)
      .add("model", meta.model)
      .add("choices", json::make_array({choice.build()}))
      .add("usage", std::move(usage))
      .build();
}

json chunk_json(const parsed_request& r, const response_meta& meta, const std::string& text, bool first,
                const std::string& finish_reason) {
  const bool chat = r.kind == endpoint::chat;
  json_object_builder choice;
  choice.add("index", 0);
  if (chat) {
    json_object_builder delta;
    if (first) delta.add("role", "assistant");
    if (!text.empty() || finish_reason.empty()) delta.add("content", text);
    choice.add("delta", delta.build());
  } else {
    choice.add("text", text).add("logprobs", json());
  }
  choice.add("finish_reason", finish_reason.empty() ? json() : io::json_value(finish_reason));
  json_object_builder c;
  c.add("id", meta.id)
      .add("object", chat ? "chat.completion.chunk" : "text_completion")
      .add("created", meta.created)
      .add("model", meta.model)
      .add("choices", json::make_array({choice.build()}));
  if (r.include_usage) c.add("usage", json());
  return c.build();
}

json usage_chunk_json(const parsed_request& r, const response_meta& meta, json usage) {
  return json_object_builder()
      .add("id", meta.id)
      .add("object", r.kind == endpoint::chat ? "chat.completion.chunk" : "text_completion")
      .add("created", meta.created)
      .add("model", meta.model)
      .add("choices", json::make_array({}))
      .add("usage", std::move(usage))
      .build();
}

json error_json(const std::string& message, const std::string& type, const std::string& code) {
  return json_object_builder()
      .add("error", json_object_builder()
                        .add("message", message)
                        .add("type", type)
                        .add("param", json())
                        .add("code", code.empty() ? json() : io::json_value(code))
                        .build())
      .build();
}

json models_json(const std::string& model, std::int64_t created) {
  json entry = json_object_builder()
                   .add("id", model)
                   .add("object", "model")
                   .add("created", created)
                   .add("owned_by", "muninn")
                   .build();
  return json_object_builder().add("object", "list").add("data", json::make_array({std::move(entry)})).build();
}

}  // namespace muninn::server
