// Python values in (token ids, options by keyword) and numpy arrays out (owning the C++ results).

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <deque>
#include <limits>

#include "binding.hpp"

namespace muninn::python {
namespace {

using any_array = nb::ndarray<nb::ro>;

[[noreturn]] void type_error(const std::string& msg) { throw nb::type_error(msg.c_str()); }

std::string python_type(nb::handle obj) { return nb::cast<std::string>(nb::type_name(obj.type())); }

any_array as_array(nb::handle obj, const std::string& what) {
  any_array a;
  if (!nb::try_cast(obj, a, false))
    type_error(what + ": a " + python_type(obj) + " that does not export its data (DLPack or the buffer protocol)");
  if (a.device_type() != nb::device::cpu::value)
    type_error(what + ": an array on another device; give host memory (e.g. tensor.cpu())");
  return a;
}

const char* dtype_name(nb::dlpack::dtype t) {
  switch (nb::dlpack::dtype_code(t.code)) {
    case nb::dlpack::dtype_code::Float:
    case nb::dlpack::dtype_code::Bfloat: return "float";
    case nb::dlpack::dtype_code::Bool: return "bool";
    case nb::dlpack::dtype_code::Complex: return "complex";
    default: return "non-integer";
  }
}

// Element `i` of a 1-D integer array of any layout, as a 64-bit integer (uint64 above INT64_MAX: max).
std::int64_t integer_at(const std::uint8_t* base, nb::dlpack::dtype t, std::int64_t stride_bytes, std::size_t i) {
  const std::uint8_t* p = base + std::int64_t(i) * stride_bytes;
  const bool sign = nb::dlpack::dtype_code(t.code) == nb::dlpack::dtype_code::Int;
  switch (t.bits) {
    case 8: return sign ? std::int64_t(*reinterpret_cast<const std::int8_t*>(p)) : std::int64_t(*p);
    case 16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return sign ? std::int64_t(std::int16_t(v)) : std::int64_t(v);
    }
    case 32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return sign ? std::int64_t(std::int32_t(v)) : std::int64_t(v);
    }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      if (!sign && v > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return std::numeric_limits<std::int64_t>::max();
      return std::int64_t(v);
    }
  }
}

std::int32_t narrow_id(std::int64_t v, std::size_t i, const std::string& what) {
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    fail_as(error_kind::usage, what, ": token id ", v, " at index ", i, " does not fit in 32 bits");
  return std::int32_t(v);
}

void check_integer_dtype(const any_array& a, const std::string& what) {
  const auto code = nb::dlpack::dtype_code(a.dtype().code);
  const bool integer = code == nb::dlpack::dtype_code::Int || code == nb::dlpack::dtype_code::UInt;
  if (!integer || a.dtype().lanes != 1 || !(a.dtype().bits == 8 || a.dtype().bits == 16 || a.dtype().bits == 32 ||
                                            a.dtype().bits == 64))
    type_error(what + " must hold integer token ids, got an array of " + dtype_name(a.dtype()) +
               (nb::dlpack::dtype_code(a.dtype().code) == nb::dlpack::dtype_code::Bool ? ""
                                                                                    : std::to_string(a.dtype().bits)));
}

// Row `r` of a 2-D array (r = -1: the 1-D array itself).
std::vector<std::int32_t> ids_of_array(const any_array& a, std::int64_t r, const std::string& what) {
  check_integer_dtype(a, what);
  const std::int64_t item = std::int64_t(a.itemsize());
  const std::size_t axis = r < 0 ? 0 : 1;
  const auto* base = static_cast<const std::uint8_t*>(a.data()) + (r < 0 ? 0 : r * a.stride(0) * item);
  std::vector<std::int32_t> ids(a.shape(axis));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = narrow_id(integer_at(base, a.dtype(), a.stride(axis) * item, i), i, what);
  return ids;
}

std::vector<std::int32_t> ids_of_sequence(nb::handle obj, const std::string& what) {
  std::vector<std::int32_t> ids;
  std::size_t i = 0;
  for (nb::handle item : obj) {
    if (PyBool_Check(item.ptr()) || PyFloat_Check(item.ptr()) || !PyIndex_Check(item.ptr()))
      type_error(what + " must hold integer token ids, got " + python_type(item) + " at index " + std::to_string(i));
    nb::object index = nb::steal(PyNumber_Index(item.ptr()));
    if (!index.is_valid()) throw nb::python_error();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0 || v == -1) {
      if (PyErr_Occurred()) throw nb::python_error();
      if (overflow != 0) fail_as(error_kind::usage, what, ": token id ", nb::cast<std::string>(nb::str(item)),
                                 " at index ", i, " does not fit in 32 bits");
    }
    ids.push_back(narrow_id(v, i, what));
    ++i;
  }
  return ids;
}

bool is_list(nb::handle obj) { return PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()); }
// A numpy integer scalar (np.int64(3)) exports __array_interface__ too, but is one id, not a sequence.
bool is_scalar(nb::handle obj) {
  long ndim = 1;
  const nb::object a = nb::getattr(obj, "ndim", nb::none());
  return !a.is_none() && nb::try_cast(a, ndim) && ndim == 0;
}
bool is_sequence_like(nb::handle obj) {
  return is_list(obj) || (is_array(obj) && !is_scalar(obj)) || nb::isinstance<nb::str>(obj);
}

[[noreturn]] void too_deep(const std::string& what, const std::string& shape) {
  fail_as(error_kind::usage, what, " is ", shape, ": give one sequence (a list of ints or a 1-D array) or a batch "
          "(a list of sequences or a 2-D array)");
}

template <class T>
nb::object owning_array(std::vector<T>&& values, std::vector<std::size_t> shape) {
  if (shape.empty()) shape.push_back(values.size());
  if (values.empty()) values.reserve(1);  // a valid data pointer for an empty array
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner));
}

std::string dashed(std::string name) {
  for (auto& c : name)
    if (c == '_') c = '-';
  return name;
}

std::string underscored(std::string name) {
  for (auto& c : name)
    if (c == '-') c = '_';
  return name;
}

bool listed(std::initializer_list<const char*> names, const std::string& name) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// The value of option `s` as the table's text, or nothing for an unset switch or None.
bool option_text(const fe::option_spec& s, nb::handle v, const std::string& name, std::string& out) {
  const auto wrong = [&](const char* want) {
    type_error(name + " must be " + want + ", got " + python_type(v));
  };
  const bool is_bool = PyBool_Check(v.ptr());
  switch (s.type) {
    case fe::value_type::flag:
      if (!is_bool) wrong("True or False");
      out.clear();
      return v.ptr() == Py_True;
    case fe::value_type::integer: {
      if (is_bool || PyFloat_Check(v.ptr()) || !PyIndex_Check(v.ptr())) wrong("an int");
      nb::object index = nb::steal(PyNumber_Index(v.ptr()));  // fails for an array of more than one value
      if (!index.is_valid()) {
        PyErr_Clear();
        wrong("an int");
      }
      out = nb::cast<std::string>(nb::str(index));
      return true;
    }
    case fe::value_type::number: {
      if (is_bool || !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()) || PyNumber_Check(v.ptr()))) wrong("a number");
      const double d = PyFloat_AsDouble(v.ptr());
      if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
      out = nb::cast<std::string>(nb::repr(nb::float_(d)));  // the shortest text that reads back as d
      return true;
    }
    case fe::value_type::ids: {
      std::vector<std::int32_t> ids;
      if (is_list(v) || is_array(v))
        ids = ids_from(v, name);
      else if (PyIndex_Check(v.ptr()) && !is_bool)
        ids = ids_of_sequence(nb::make_tuple(v), name);
      else
        wrong("a token id or a list of them");
      out.clear();
      for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
      return true;
    }
    case fe::value_type::choice:
      if (!nb::isinstance<nb::str>(v)) wrong(("one of " + s.metavar).c_str());
      out = nb::cast<std::string>(v);
      return true;
    case fe::value_type::text:
      if (!nb::isinstance<nb::str>(v) && !nb::hasattr(v, "__fspath__")) wrong("a str");
      out = nb::cast<std::string>(nb::str(nb::module_::import_("os").attr("fspath")(v)));
      return true;
  }
  return false;
}

}  // namespace

bool is_array(nb::handle obj) {
  return !is_list(obj) && (nb::hasattr(obj, "__dlpack__") || nb::hasattr(obj, "__array_interface__"));
}

std::vector<std::int32_t> ids_from(nb::handle obj, const std::string& what) {
  if (is_array(obj)) {
    const any_array a = as_array(obj, what);
    if (a.ndim() == 0) type_error(what + " is a 0-d array; give a sequence of token ids");
    if (a.ndim() != 1) too_deep(what, "a " + std::to_string(a.ndim()) + "-D array");
    return ids_of_array(a, -1, what);
  }
  if (is_list(obj)) return ids_of_sequence(obj, what);
  type_error(what + " must be token ids (a list of ints or an integer array), got " + python_type(obj));
}

bool is_batch(nb::handle obj, const std::string& what) {
  if (is_array(obj)) {
    const any_array a = as_array(obj, what);
    if (a.ndim() > 2) too_deep(what, "a " + std::to_string(a.ndim()) + "-D array");
    return a.ndim() == 2;
  }
  if (!is_list(obj) || nb::len(obj) == 0) return false;
  nb::handle first = obj[0];
  if (!is_sequence_like(first)) return false;
  if (is_list(first) && nb::len(first) > 0 && is_list(first[0])) too_deep(what, "a list nested three deep");
  return true;
}

std::vector<std::vector<std::int32_t>> batch_from(nb::handle obj, const std::string& what) {
  std::vector<std::vector<std::int32_t>> rows;
  if (is_array(obj)) {
    const any_array a = as_array(obj, what);
    if (a.ndim() != 2) too_deep(what, "a " + std::to_string(a.ndim()) + "-D array");
    for (std::size_t r = 0; r < a.shape(0); ++r)
      rows.push_back(ids_of_array(a, std::int64_t(r), what + "[" + std::to_string(r) + "]"));
    return rows;
  }
  std::size_t r = 0;
  for (nb::handle row : obj) rows.push_back(ids_from(row, what + "[" + std::to_string(r++) + "]"));
  return rows;
}

nb::object numpy_f32(std::vector<float>&& v, std::vector<std::size_t> shape) { return owning_array(std::move(v), shape); }
nb::object numpy_i32(std::vector<std::int32_t>&& v, std::vector<std::size_t> shape) {
  return owning_array(std::move(v), shape);
}
nb::object numpy_i64(std::vector<std::int64_t>&& v, std::vector<std::size_t> shape) {
  return owning_array(std::move(v), shape);
}

fe::option_values options_from(fe::operation op, const nb::kwargs& kwargs, const char* method,
                               std::initializer_list<const char*> positional) {
  fe::option_values o(op, "", '_');
  const std::vector<const fe::option_spec*> allowed = fe::call_options(op);
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    const fe::option_spec* spec = nullptr;
    for (const auto* s : allowed)
      if (s->name == dashed(name) && name.find('-') == std::string::npos && !listed(positional, s->name)) spec = s;
    if (!spec) type_error(std::string(method) + "() got an unexpected keyword argument '" + name + "'");
    if (value.is_none()) continue;
    std::string text;
    if (option_text(*spec, value, name, text)) o.set(spec->name, text);
  }
  for (const auto* s : allowed)
    if (s->required && !s->model_free && !listed(positional, s->name) && !o.has(s->name))
      type_error(std::string(method) + "() missing required keyword argument '" + underscored(s->name) + "'");
  o.validate();
  return o;
}

std::string options_doc(fe::operation op, std::initializer_list<const char*> positional) {
  std::string doc = "Keyword arguments (the options of `muninn " + std::string(fe::operation_name(op)) +
                    "`, with underscores):\n";
  bool any = false;
  for (const auto* s : fe::call_options(op)) {
    if (listed(positional, s->name) || (s->required && s->model_free)) continue;
    any = true;
    static const char* const types[] = {"bool", "int", "float", "str", "str", "list[int]"};
    doc += "    " + underscored(s->name) + " (" + types[int(s->type)] + (s->required ? ", required" : "") + "): " +
           s->help;
    const std::string range = fe::range_text(*s), def = fe::default_text(*s);
    if (!range.empty()) doc += "; " + range;
    if (s->type == fe::value_type::choice) doc += "; one of " + s->metavar;
    if (!def.empty()) doc += " " + def;
    if (!s->families.empty()) {
      doc += " [";
      for (std::size_t i = 0; i < s->families.size(); ++i) doc += (i ? ", " : "") + s->families[i];
      doc += "]";
    }
    doc += "\n";
  }
  return any ? doc : "";
}

nb::object text_of(const std::string& utf8) {
  PyObject* s = PyUnicode_DecodeUTF8(utf8.data(), Py_ssize_t(utf8.size()), "replace");
  if (!s) throw nb::python_error();
  return nb::steal(s);
}

const char* keep(std::string s) {
  static std::deque<std::string> kept;  // docstrings live as long as the module
  kept.push_back(std::move(s));
  return kept.back().c_str();
}

}  // namespace muninn::python
