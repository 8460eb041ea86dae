#pragma once
/// \file
/// \brief Writing JSON with the same `io::json` value the strict reader produces: a compact
/// serialiser and a small builder, so that a server's requests and responses and the checkpoint
/// readers share one JSON implementation.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/json.hpp"

namespace muninn::io {

namespace detail {

inline void append_json_number(std::string& out, const json& v) {
  char buf[32];
  std::to_chars_result r{};
  if (v.is_int()) {
    r = std::to_chars(buf, buf + sizeof buf, v.as_int());
  } else {
    const double d = v.as_double();
    MUNINN_CHECK(std::isfinite(d), "JSON has no spelling for the number ", d);
    r = std::to_chars(buf, buf + sizeof buf, d);  // shortest text that reads back as the same double
  }
  out.append(buf, r.ptr);
}

}  // namespace detail

/// \brief Appends `v` to `out` as compact JSON (no spaces; members in their stored order; numbers
/// as the exact integer or the shortest text that reads back as the same double). A non-finite
/// number is an error: JSON cannot spell it.
inline void write_json(std::string& out, const json& v) {
  // An explicit stack instead of recursion: values built from request data stay shallow, but a
  // writer should not depend on that.
  struct frame {
    const json* v;
    std::size_t next;  // the child to write next
  };
  std::vector<frame> stack{{&v, 0}};
  while (!stack.empty()) {
    frame& f = stack.back();
    const json& cur = *f.v;
    if (cur.is_array() || cur.is_object()) {
      const bool obj = cur.is_object();
      if (f.next == 0) out += obj ? '{' : '[';
      if (f.next == cur.size()) {
        out += obj ? '}' : ']';
        stack.pop_back();
        continue;
      }
      if (f.next > 0) out += ',';
      const json* child = nullptr;
      if (obj) {
        const auto& m = cur.as_object()[f.next];
        append_json_string(out, m.first);
        out += ':';
        child = &m.second;
      } else {
        child = &cur.as_array()[f.next];
      }
      ++f.next;
      stack.push_back({child, 0});
      continue;
    }
    switch (cur.type()) {
      case json::kind::null: out += "null"; break;
      case json::kind::boolean: out += cur.as_bool() ? "true" : "false"; break;
      case json::kind::number: detail::append_json_number(out, cur); break;
      case json::kind::string: append_json_string(out, cur.as_string()); break;
      default: break;
    }
    stack.pop_back();
  }
}

/// \brief `v` as compact JSON text.
inline std::string to_json_text(const json& v) {
  std::string out;
  write_json(out, v);
  return out;
}

/// \brief A `json` as it is (json_value converts strings, booleans, integers and doubles; a
/// whole double is written without a fraction, "1", which JSON does not tell apart from 1.0).
inline json json_value(json v) { return v; }
/// \brief A string value.
inline json json_value(std::string_view s) { return json::make_string(std::string(s)); }
/// \brief A string value.
inline json json_value(const char* s) { return json::make_string(s); }
/// \brief A string value.
inline json json_value(const std::string& s) { return json::make_string(s); }
/// \brief A boolean value.
inline json json_value(bool b) { return json::make_bool(b); }
/// \brief A number value from any integer type.
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
json json_value(I i) {
  return json::make_number(double(i), true, std::int64_t(i));
}
/// \brief A number value; a non-finite one is an error when written.
inline json json_value(double d) { return json::make_number(d, false, 0); }

/// \brief A JSON array of values converted by json_value.
template <class T>
json json_array(const std::vector<T>& items) {
  json::array_t a;
  a.reserve(items.size());
  for (const auto& x : items) a.push_back(json_value(x));
  return json::make_array(std::move(a));
}

/// \brief Builds a JSON object member by member; a key given twice is an error (the reader
/// rejects duplicate keys, so the writer never produces them).
class json_object_builder {
 public:
  /// \brief Adds member `key` with `value` converted by json_value.
  template <class V>
  json_object_builder& add(std::string key, V&& value) {
    for (const auto& m : members_) MUNINN_CHECK(m.first != key, "JSON object: key '", key, "' given twice");
    members_.emplace_back(std::move(key), json_value(std::forward<V>(value)));
    return *this;
  }
  /// \brief Whether nothing was added.
  bool empty() const { return members_.empty(); }
  /// \brief The object (the builder is left empty).
  json build() { return json::make_object(std::move(members_)); }

 private:
  json::object_t members_;
};

}  // namespace muninn::io
