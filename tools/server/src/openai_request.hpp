#pragma once
// An OpenAI request body (POST /v1/completions, /v1/chat/completions) read strictly: the fields
// the API defines (unsupported values of them rejected with the field named), the extra fields
// that carry the model's own options (the front end's generate options, spelled with
// underscores), and nothing else.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"
#include "muninn/frontend/options.hpp"
#include "muninn/io/json.hpp"

namespace muninn::server {

struct settings;

/// \brief Which endpoint a body was sent to.
enum class endpoint { completions, chat };

/// \brief A request as the scheduler and the response writer need it.
struct parsed_request {
  endpoint kind = endpoint::completions;
  std::vector<std::int32_t> prompt;     ///< token ids (a chat: its rendered template, encoded)
  frontend::option_values options{frontend::operation::generate, "", '_'};  ///< as the batch engine reads them
  std::vector<std::int32_t> stop_ids;   ///< the model's end-of-sequence ids unless ignore_eos
  std::vector<std::string> stop;        ///< stop strings
  bool stream = false;
  bool include_usage = false;           ///< stream_options.include_usage
  std::uint64_t seed = 0;               ///< the seed in force (drawn when the request gave none)
  io::json::object_t echo;              ///< the model options the request gave, echoed in usage
};

/// \brief Parses and checks `body` for `m`; usage errors (HTTP 400) name the field.
parsed_request parse_request(endpoint kind, const std::string& body, const frontend::loaded_model& m,
                             const settings& s);

/// \brief A library message with the option names the front end uses replaced by the request
/// fields a client sent (max_new_tokens → max_tokens).
std::string with_field_names(std::string message);

}  // namespace muninn::server
