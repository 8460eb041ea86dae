#pragma once
/// \file
/// \brief What every family's config.json reader shares: field lookup under aliases with the
/// file and field named in each error, bounds from io::load_limits, and the path of config.json.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "muninn/core/config.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/json.hpp"

namespace muninn::io {

namespace detail {

// Looks fields up under their accepted spellings and reports problems with the file and field named.
class config_fields {
 public:
  config_fields(const json& root, const std::string& path) : root_(root), path_(path) {}

  // The value under the first present name (null counts as absent); both spellings present with
  // different values is an error, since either choice would silently drop one.
  const json* find(std::initializer_list<const char*> names, const char*& used) const {
    const json* found = nullptr;
    used = *names.begin();
    for (const char* n : names) {
      const json* v = root_.find(n);
      if (!v || v->is_null()) continue;
      if (!found) {
        found = v;
        used = n;
      } else if (!same_scalar(*found, *v)) {
        fail(path_, ": fields '", used, "' and '", n, "' are aliases but disagree");
      }
    }
    return found;
  }

  // An integer in [min_value, max_value]; the maxima come from load_limits, so products of the
  // sizes read here cannot overflow and no count can make a tiny file build a huge name list.
  std::int64_t integer(std::initializer_list<const char*> names, std::int64_t min_value, std::int64_t max_value) const {
    const char* used = nullptr;
    const json* v = find(names, used);
    if (!v) fail(path_, ": missing required field '", spelled(names), "'");
    return check_int(*v, used, min_value, max_value);
  }
  std::int64_t integer(std::initializer_list<const char*> names, std::int64_t min_value, std::int64_t max_value,
                       std::int64_t fallback) const {
    const char* used = nullptr;
    const json* v = find(names, used);
    return v ? check_int(*v, used, min_value, max_value) : fallback;
  }
  // A float field: checked after narrowing to float, the type model_config stores, so 1e39
  // (inf as a float) and 1e-50 (0 as a float) are rejected rather than silently stored.
  float number(std::initializer_list<const char*> names, float fallback, bool positive) const {
    const char* used = nullptr;
    const json* v = find(names, used);
    if (!v) return fallback;
    if (!v->is_number()) fail(path_, ": field '", used, "' must be a number, found ", v->type_name());
    const double d = v->as_double();
    const float x = static_cast<float>(d);
    if (!std::isfinite(x)) fail(path_, ": field '", used, "' = ", d, " does not fit a float");
    if (positive ? !(x > 0) : !(x >= 0))
      fail(path_, ": field '", used, "' must be ", positive ? "positive" : "non-negative", ", found ", d,
           positive && d > 0 ? " (0 as a float)" : "");
    return x;
  }
  bool boolean(std::initializer_list<const char*> names, bool fallback) const {
    const char* used = nullptr;
    const json* v = find(names, used);
    if (!v) return fallback;
    if (!v->is_bool()) fail(path_, ": field '", used, "' must be true or false, found ", v->type_name());
    return v->as_bool();
  }
  std::string string(std::initializer_list<const char*> names, const std::string& fallback) const {
    const char* used = nullptr;
    const json* v = find(names, used);
    if (!v) return fallback;
    if (!v->is_string()) fail(path_, ": field '", used, "' must be a string, found ", v->type_name());
    return v->as_string();
  }

 private:
  static bool same_scalar(const json& a, const json& b) {
    if (a.type() != b.type()) return false;
    if (a.is_number()) return a.as_double() == b.as_double();
    if (a.is_bool()) return a.as_bool() == b.as_bool();
    if (a.is_string()) return a.as_string() == b.as_string();
    return a.is_null();
  }
  static std::string spelled(std::initializer_list<const char*> names) {
    std::string s;
    for (const char* n : names) s += (s.empty() ? "" : "' (or '") + std::string(n);
    return names.size() > 1 ? s + "')" : s;
  }
  std::int64_t check_int(const json& v, const char* name, std::int64_t min_value, std::int64_t max_value) const {
    if (!v.is_int())
      fail(path_, ": field '", name, "' must be an integer, found ", v.is_number() ? "a non-integral number" : v.type_name());
    const std::int64_t i = v.as_int();
    if (i < min_value) fail(path_, ": field '", name, "' must be at least ", min_value, ", found ", i);
    if (i > max_value) fail(path_, ": field '", name, "' = ", i, " exceeds Muninn's limit of ", max_value);
    return i;
  }

  const json& root_;
  const std::string& path_;
};

// The RoPE table (block_size x head_dim floats) is built from the config alone, before any
// tensor is checked against the checkpoint, so its size needs its own bound.
inline void check_rope_table(const model_config& c, const std::string& path) {
  std::int64_t n = 0;
  if (!checked::mul(c.block_size, c.head_dim, n) || n > load_limits::max_rope_table)
    fail(path, ": block_size (max_position_embeddings) = ", c.block_size, " x head_dim = ", c.head_dim,
         " exceeds Muninn's limit of ", load_limits::max_rope_table, " RoPE table entries");
}

}  // namespace detail

/// \brief The config.json a path names: the path itself, or config.json inside it when it is a
/// checkpoint directory.
inline std::string config_json_path(const std::string& path_or_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path_or_dir, ec)) return path_or_dir;
  return (std::filesystem::path(path_or_dir) / "config.json").string();
}

}  // namespace muninn::io
