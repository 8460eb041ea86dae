#pragma once
/// \file
/// \brief Reading YAML configs (yaml-cpp) as hostile input: size and flow nesting are capped before
/// the parser sees the text, aliases are never expanded, and every error names the file and key.

#include <cstddef>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "muninn/core/error.hpp"
#include "muninn/io/json.hpp"

namespace muninn::io {
namespace detail {

// The node at a dotted path, or an undefined node. Read through a const node and rebound with
// reset(): assigning a yaml-cpp Node writes into the node it refers to, and a deep copy of the
// document would expand its aliases.
inline YAML::Node yaml_at(const YAML::Node& root, const std::string& dotted) {
  YAML::Node n;
  n.reset(root);
  std::stringstream ss(dotted);
  for (std::string key; std::getline(ss, key, '.');) {
    if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& m = n;
    const YAML::Node child = m[key];
    if (!child.IsDefined()) return child;
    n.reset(child);
  }
  return n;
}

// The parser recurses per level of flow nesting: cap it (and the size; a config is a few KB)
// before yaml-cpp sees the text.
inline constexpr std::size_t yaml_max_bytes = 1 << 20;
inline void check_yaml_shape(const std::string& text, const std::string& path) {
  constexpr int max_depth = 64;
  MUNINN_CHECK(text.size() <= yaml_max_bytes, path, ": a YAML config of ", text.size(), " bytes (at most ",
               yaml_max_bytes, " are read)");
  int depth = 0;
  for (char c : text) {
    depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    MUNINN_CHECK(depth <= max_depth, path, ": YAML nested more than ", max_depth, " levels deep");
  }
}

// A YAML file parsed whole; a path that is not a regular file, a file over yaml_max_bytes and text
// nested too deeply are refused before yaml-cpp sees them.
inline YAML::Node load_yaml_file(const std::string& path) {
  const std::string text = read_text_file(path, yaml_max_bytes);
  check_yaml_shape(text, path);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(path, ": not valid YAML: ", e.what());
  }
}

template <class V>
V yaml_value(const YAML::Node& root, const std::string& key, const std::string& path, const V& def) {
  const YAML::Node n = yaml_at(root, key);
  if (!n.IsDefined() || n.IsNull()) return def;
  MUNINN_CHECK(n.IsScalar(), path, ": field '", key, "' must be a scalar");
  const std::string text = n.Scalar();
  MUNINN_CHECK(text.find("${") == std::string::npos, path, ": field '", key, "' is the interpolation '", text,
               "'; give the resolved Hydra config (the run's .hydra/config.yaml)");
  try {
    return n.as<V>();
  } catch (const YAML::Exception&) {
    fail(path, ": field '", key, "' has the value '", text, "' of the wrong type");
  }
}

}  // namespace detail
}  // namespace muninn::io
