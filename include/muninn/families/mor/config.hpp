#pragma once
/// \file
/// \brief Mixture-of-Recursions settings and config (`mor_settings`, `mor_config`), and reading
/// them from a Llama config.json with a `mor` block.

#include <cstdint>
#include <string>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/families/llama/config.hpp"
#include "muninn/families/mor/sharing_map.hpp"
#include "muninn/io/config_json.hpp"
#include "muninn/io/float_setting.hpp"
#include "muninn/io/json.hpp"

namespace muninn {

/// \brief Mixture-of-Recursions settings: which tokens take how many recursions of the shared
/// block, and how the routers decide (what router::expert_choice and router::token_choice read).
struct mor_settings {
  std::int64_t recursions = 0;          ///< Nr, recursions of the shared block
  std::string sharing = "middle_cycle"; ///< cycle | sequence | middle_cycle | middle_sequence: the layout (first and last layer apart or not)
  std::string type = "expert";          ///< "expert" (expert-choice) or "token" (token-choice) routing
  std::string router_type = "linear";   ///< "linear" or "mlp" (Linear d→2d, GELU, Linear 2d→out)
  std::string router_func = "sigmoid";  ///< expert: sigmoid | tanh | none; token: softmax | sigmoid
  double alpha = 0.1;                   ///< gate scale α
  std::vector<double> capacity;         ///< expert: share of candidates kept at each recursion (non-increasing)
  double temp = 1.0;                    ///< router input divisor
  bool router_bias = false;             ///< token: a loss-free balancing bias enters the choice (not the gate)
  bool kv_sharing = false;              ///< recursions ≥ 1 reuse recursion 0's keys and values
};

/// \brief A Mixture-of-Recursions model's config: a Llama config whose layers are laid out as
/// first layer(s), a shared block and last layer(s), and the routing settings.
struct mor_config : llama_config {
  mor_settings mor;  ///< routers and recursions
};

namespace io {
namespace detail {

inline const json& mor_field(const json& mor, const char* key, const std::string& path) {
  const json* v = mor.find(key);
  if (!v || v->is_null()) fail(path, ": field 'mor.", key, "' is missing");
  return *v;
}

inline std::string mor_string(const json& mor, const char* key, const std::string& path, const std::string& def) {
  const json* v = mor.find(key);
  if (!v || v->is_null()) return def;
  if (!v->is_string()) fail(path, ": field 'mor.", key, "' must be a string, found ", v->type_name());
  return v->as_string();
}

inline double mor_number(const json& mor, const char* key, const std::string& path, double def) {
  const json* v = mor.find(key);
  if (!v || v->is_null()) return def;
  if (!v->is_number()) fail(path, ": field 'mor.", key, "' must be a number, found ", v->type_name());
  return v->as_double();
}

// The router's float settings, checked where they are read (the field names differ between config.json's
// block and the Hydra YAML): the router computes in float, dividing its input by temp and scaling its gate
// by alpha, so both must be finite, and far enough from 0 and from overflow to mean something.
inline double mor_temp(double v, const std::string& path, const std::string& name) {
  return float_setting(v, 1e-6, 1e6, false, path, name);
}
inline double mor_alpha(double v, const std::string& path, const std::string& name) {
  return float_setting(v, 0, 1e6, true, path, name);
}

// Checks the settings against each other: recursions, a sharing strategy, router kinds, a non-increasing capacity list of one entry per recursion.
inline void check_mor_settings(const mor_settings& m, const std::string& path) {
  MUNINN_CHECK(m.recursions >= 1 && m.recursions <= 64, path, ": field 'mor.num_recursion' must be in [1, 64], got ",
               m.recursions);
  try {
    parse_sharing(m.sharing);
  } catch (const error&) {
    fail(path, ": field 'mor.sharing' is \"", m.sharing, "\"; it must be cycle, sequence, middle_cycle or middle_sequence");
  }
  MUNINN_CHECK(m.type == "expert" || m.type == "token", path, ": field 'mor.type' must be \"expert\" or \"token\", got \"",
               m.type, "\"");
  MUNINN_CHECK(m.router_type == "linear" || m.router_type == "mlp" || m.router_type == "wide_mlp", path,
               ": field 'mor.router_type' must be linear, mlp or wide_mlp, got \"", m.router_type, "\"");
  if (m.type == "expert")
    MUNINN_CHECK(m.router_func == "sigmoid" || m.router_func == "tanh" || m.router_func == "none", path,
                 ": field 'mor.router_func' of an expert-choice router must be sigmoid, tanh or none, got \"",
                 m.router_func, "\"");
  else
    MUNINN_CHECK(m.router_func == "softmax" || m.router_func == "sigmoid", path,
                 ": field 'mor.router_func' of a token-choice router must be softmax or sigmoid, got \"", m.router_func,
                 "\"");
  if (m.type != "expert") return;
  MUNINN_CHECK(m.capacity.empty() || std::int64_t(m.capacity.size()) == m.recursions, path, ": field 'mor.capacity' has ",
               m.capacity.size(), " entries for ", m.recursions, " recursions");
  for (std::size_t r = 0; r < m.capacity.size(); ++r) {
    MUNINN_CHECK(m.capacity[r] > 0 && m.capacity[r] <= 1, path, ": field 'mor.capacity' entry ", r, " is ",
                 m.capacity[r], "; capacities are shares in (0, 1]");
    MUNINN_CHECK(r == 0 || m.capacity[r] <= m.capacity[r - 1], path, ": field 'mor.capacity' increases at entry ", r,
                 " (", m.capacity[r - 1], " then ", m.capacity[r], "); deeper recursions keep fewer tokens");
  }
}

}  // namespace detail

/// \brief The `mor` block of a config.json (Muninn's format, named after the reference's Hydra
/// keys): num_recursion, sharing, type, router_type, router_func, alpha, capacity (list), temp,
/// balancing ("loss_free" adds the router bias), kv_sharing {enable}.
inline mor_settings mor_settings_from_json(const json& mor, const std::string& path) {
  if (!mor.is_object()) fail(path, ": field 'mor' must be an object, found ", mor.type_name());
  mor_settings m;
  const json& nr = detail::mor_field(mor, "num_recursion", path);
  if (!nr.is_number()) fail(path, ": field 'mor.num_recursion' must be an integer");
  m.recursions = nr.as_int();
  m.sharing = detail::mor_string(mor, "sharing", path, m.sharing);
  m.type = detail::mor_string(mor, "type", path, m.type);
  m.router_type = detail::mor_string(mor, "router_type", path, m.router_type);
  m.router_func = detail::mor_string(mor, "router_func", path, m.type == "token" ? "softmax" : "sigmoid");
  m.alpha = detail::mor_alpha(detail::mor_number(mor, "alpha", path, m.type == "token" ? 1.0 : 0.1), path, "mor.alpha");
  m.temp = detail::mor_temp(detail::mor_number(mor, "temp", path, 1.0), path, "mor.temp");
  if (const json* c = mor.find("capacity"); c && !c->is_null()) {
    if (!c->is_array()) fail(path, ": field 'mor.capacity' must be a list of numbers");
    for (std::size_t i = 0; i < c->size(); ++i) {
      if (!(*c)[i].is_number()) fail(path, ": field 'mor.capacity' entry ", i, " is not a number");
      m.capacity.push_back((*c)[i].as_double());
    }
  }
  m.router_bias = detail::mor_string(mor, "balancing", path, "loss") == "loss_free";
  if (const json* kv = mor.find("kv_sharing"); kv && kv->is_object())
    if (const json* en = kv->find("enable"); en && en->is_bool()) m.kv_sharing = en->as_bool();
  detail::check_mor_settings(m, path);
  return m;
}

/// \brief A mor_config: the Llama fields, then the recursion layout from `settings`: the first
/// layer (middle_cycle) in the prelude group, the B shared layers in the core group with
/// mean_recurrence = Nr, the last layer (middle_cycle) in the coda group. num_hidden_layers is the
/// unrolled depth the checkpoint stores (1 + B·Nr + 1 for middle_cycle).
inline mor_config mor_config_with(const json& root, const std::string& path, const mor_settings& settings) {
  mor_config c;
  static_cast<llama_config&>(c) = llama_config_from_json(root, path);
  c.mor = settings;
  const std::int64_t L = c.n_layers_in_prelude;  // the Llama reader puts every layer in the prelude
  const sharing_map map = make_sharing_map(parse_sharing(c.mor.sharing), L, c.mor.recursions);
  MUNINN_CHECK(map.size() == L, path, ": num_hidden_layers = ", L, " is not ", map.middle() ? "2 + " : "",
               "num_recursion (", c.mor.recursions, ") x a block depth; the checkpoint stores the unrolled layers");
  c.n_layers_in_prelude = map.middle() ? 1 : 0;
  c.n_layers_in_recurrent_block = map.block;
  c.n_layers_in_coda = map.middle() ? 1 : 0;
  c.mean_recurrence = c.mor.recursions;
  return c;
}

/// \brief mor_config_with the settings of config.json's own `mor` block.
inline mor_config mor_config_from_json(const json& root, const std::string& path) {
  const json* mor = root.is_object() ? root.find("mor") : nullptr;
  if (!mor) fail(path, ": no 'mor' block: not a Mixture-of-Recursions config (give its Hydra YAML)");
  return mor_config_with(root, path, mor_settings_from_json(*mor, path));
}

}  // namespace io
}  // namespace muninn
