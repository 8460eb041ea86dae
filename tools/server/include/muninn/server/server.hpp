#pragma once
/// \file
/// \brief `muninn serve`: an OpenAI-compatible HTTP server (completions, chat completions,
/// models, health, Prometheus metrics) in front of one loaded model, with continuous batching:
/// one scheduler thread owns the model and its batch engine, and requests join and leave the
/// running batch at token boundaries. docs/serving.md describes the endpoints and the design.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "muninn/frontend/model.hpp"
#include "muninn/frontend/options.hpp"

namespace muninn::server {

/// \brief Everything the server is told at start (the options of operation::serve).
struct settings {
  std::string host = "127.0.0.1";    ///< listening address
  int port = 8080;                   ///< 0: a free port (printed when listening)
  std::int64_t max_batch = 16;       ///< requests decoding at once
  std::int64_t max_queue = 64;       ///< requests waiting beyond the batch; more get 429
  std::string api_key;               ///< required bearer token; empty: none
  std::int64_t context = 0;          ///< positions per request (0: the model's context)
  std::int64_t prefill_chunk = 64;   ///< prompt tokens fed per step
  double timeout_s = 600;            ///< per request, from arrival to the last token
  std::int64_t max_body = 1 << 20;   ///< request body limit in bytes
  double grace_s = 30;               ///< SIGTERM: time running requests get to finish
  bool continuous = true;            ///< false: sequence-wise batches (the measurement baseline)
  std::string model_name;            ///< the id /v1/models shows (the model folder's name)

  /// \brief The settings given as options of operation::serve (api-key: $MUNINN_API_KEY when the
  /// option is absent).
  static settings from(const frontend::option_values& o, const frontend::loaded_model& m);
};

/// \brief Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later, and
/// ignores SIGPIPE: call it first, before the model loads (the host thread pool starts threads),
/// so that `serve` alone takes those signals and drains instead of dying.
void take_signals();

/// \brief Serves `m` until SIGTERM or SIGINT, then drains (new requests get 503, running ones get
/// `grace_s` to finish, the rest are cancelled) and returns 0. `log` gets one line when listening
/// ("muninn serve: listening on http://HOST:PORT") and one per notable event. Throws a usage
/// error when the address cannot be bound.
int serve(const frontend::loaded_model& m, const settings& s, std::ostream& log);

}  // namespace muninn::server
