#pragma once
/// \file
/// \brief A restricted unpickler for the `data.pkl` that `torch.save` writes: it builds values,
///        never runs code.
///
/// Python's pickle is a small stack machine whose GLOBAL and REDUCE opcodes import and call
/// anything, which is why loading an untrusted pickle can run arbitrary code. This reader
/// interprets the opcodes itself and resolves a global only from a short allowlist: the
/// containers and tensor-rebuild functions a state dict needs, the storage classes and dtypes.
/// Any other global is refused by name. Stack depth, nesting and the pickle's size are bounded,
/// and every read is checked against the end of the input.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"

namespace muninn::io::pickle {

struct value;
/// \brief Values are shared: the memo and several containers may refer to one object.
using ref = std::shared_ptr<value>;

/// \brief What a value is.
enum class kind {
  none,      ///< None
  boolean,   ///< True / False (in value::i)
  integer,   ///< int that fits 64 bits (value::i)
  floating,  ///< float (value::f)
  string,    ///< str (value::s)
  bytes,     ///< bytes (value::s)
  tuple,     ///< tuple (value::items)
  list,      ///< list (value::items)
  dict,      ///< dict or collections.OrderedDict (value::entries)
  global,    ///< an allowlisted global, "module.name" (value::s)
  storage,   ///< a torch storage from a persistent id (value::storage)
  tensor     ///< a tensor from torch._utils._rebuild_tensor_v2 (value::tensor)
};

/// \brief A `torch.<X>Storage` reached through a persistent id: the bytes of zip entry `data/<key>`.
struct storage_ref {
  std::string dtype;     ///< torch dtype spelling of the storage class: "float32", "bfloat16", "int64", ...
  std::string key;       ///< entry name under data/
  std::string location;  ///< device tag as saved ("cpu", "cuda:0"); the bytes do not depend on it
  std::uint64_t numel = 0;  ///< number of elements of `dtype`
};

/// \brief The arguments of `torch._utils._rebuild_tensor_v2`: a view of a storage.
struct tensor_ref {
  ref storage;                        ///< a value of kind::storage
  std::uint64_t offset = 0;           ///< storage offset in elements
  std::vector<std::int64_t> shape;    ///< sizes
  std::vector<std::int64_t> strides;  ///< strides in elements
};

/// \brief One unpickled value. Only the member that belongs to `k` is meaningful.
struct value {
  kind k = kind::none;                       ///< what the value is
  std::int64_t i = 0;                        ///< boolean, integer
  double f = 0;                              ///< floating
  std::string s;                             ///< string, bytes; "module.name" of a global
  std::vector<ref> items;                    ///< tuple, list
  std::vector<std::pair<ref, ref>> entries;  ///< dict (and OrderedDict), in insertion order
  std::shared_ptr<storage_ref> storage;      ///< storage
  std::shared_ptr<tensor_ref> tensor;        ///< tensor
  bool sealed = false;  ///< stored inside another value: no longer mutable (keeps the graph acyclic)
  int depth = 0;        ///< nesting depth of containers below this value
};

/// \brief Human name of a kind, for messages.
inline const char* kind_name(kind k) {
  switch (k) {
    case kind::none: return "None";
    case kind::boolean: return "bool";
    case kind::integer: return "int";
    case kind::floating: return "float";
    case kind::string: return "str";
    case kind::bytes: return "bytes";
    case kind::tuple: return "tuple";
    case kind::list: return "list";
    case kind::dict: return "dict";
    case kind::global: return "global";
    case kind::storage: return "storage";
    case kind::tensor: return "tensor";
  }
  return "?";
}

/// \brief The torch dtype of a `torch.<X>Storage` class name, or "" when it is not one.
inline std::string storage_class_dtype(std::string_view cls) {
  static const std::pair<const char*, const char*> table[] = {
      {"FloatStorage", "float32"}, {"BFloat16Storage", "bfloat16"}, {"HalfStorage", "float16"},
      {"DoubleStorage", "float64"}, {"LongStorage", "int64"},        {"IntStorage", "int32"},
      {"ShortStorage", "int16"},   {"CharStorage", "int8"},          {"ByteStorage", "uint8"},
      {"BoolStorage", "bool"}};
  for (const auto& [name, dt] : table)
    if (cls == name) return dt;
  return "";
}

/// \brief Limits of the reader.
struct limits {
  std::size_t max_bytes = std::size_t(1) << 30;  ///< largest pickle accepted
  std::size_t max_marks = 64;                     ///< open MARKs at once
  std::size_t max_values = std::size_t(1) << 23;  ///< values created (a state dict needs ~20 per tensor)
  int max_depth = 32;                             ///< nesting of containers
  std::size_t max_dims = 64;                      ///< tensor rank
};

namespace detail {

inline bool is_dtype_global(std::string_view name) {
  static const char* const names[] = {"float32", "float", "bfloat16", "float16", "half", "float64", "double",
                                      "int64",   "long",  "int32",    "int",     "int16", "short", "int8",
                                      "uint8",   "bool"};
  if (name.substr(0, 6) != "torch.") return false;
  for (const char* n : names)
    if (name.substr(6) == n) return true;
  return false;
}

/// True for the globals a state dict may name; `torch.<X>Storage` only inside persistent ids.
inline bool allowed_global(const std::string& name) {
  if (name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
      name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state")
    return true;
  if (name.compare(0, 6, "torch.") == 0 && !storage_class_dtype(std::string_view(name).substr(6)).empty()) return true;
  return is_dtype_global(name);
}

class machine {
 public:
  machine(std::string_view bytes, std::string where, limits lim) : in_(bytes), where_(std::move(where)), lim_(lim) {}

  ref run() {
    if (in_.size() > lim_.max_bytes) bad_at(0, "the pickle is ", in_.size(), " bytes, more than the limit of ", lim_.max_bytes);
    while (true) {
      const std::size_t at = pos_;
      const std::uint8_t op = u8();
      if (op == '.') break;  // STOP
      step(op, at);
    }
    if (stack_.size() != 1 || !marks_.empty()) bad_at(pos_ - 1, "STOP leaves ", stack_.size(), " values and ", marks_.size(), " marks on the stack");
    return stack_.back();
  }

 private:
  template <class... Args>
  [[noreturn]] void bad_at(std::size_t at, Args&&... args) const {
    fail(where_, ": malformed pickle at byte ", at, ": ", std::forward<Args>(args)...);
  }

  // ---- input
  const std::uint8_t* take(std::size_t n) {
    if (n > in_.size() - pos_) bad_at(pos_, "needs ", n, " more bytes but the pickle ends (truncated?)");
    const auto* p = reinterpret_cast<const std::uint8_t*>(in_.data()) + pos_;
    pos_ += n;
    return p;
  }
  std::uint8_t u8() { return *take(1); }
  std::uint64_t uint_le(std::size_t n) {
    const std::uint8_t* p = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  std::string bytes(std::uint64_t n) {
    if (n > in_.size() - pos_) bad_at(pos_, "a string of ", n, " bytes runs past the end of the pickle");
    return std::string(reinterpret_cast<const char*>(take(std::size_t(n))), std::size_t(n));
  }
  std::string line() {
    const std::size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) bad_at(pos_, "GLOBAL name runs past the end of the pickle");
    std::string s(in_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  // ---- values
  ref make(kind k) {
    if (++values_ > lim_.max_values) bad_at(pos_, "more than ", lim_.max_values, " values");
    auto v = std::make_shared<value>();
    v->k = k;
    return v;
  }
  ref make_int(std::int64_t i) {
    ref v = make(kind::integer);
    v->i = i;
    return v;
  }
  ref make_str(kind k, std::string s) {
    ref v = make(k);
    v->s = std::move(s);
    return v;
  }
  // Stores `items` inside `parent`. The items are sealed before the parent is checked, so a
  // container can never come to hold itself (the value graph stays acyclic and shallow).
  void adopt(value& parent, const std::vector<ref>& items, std::size_t at) {
    for (const ref& x : items) x->sealed = true;
    if (parent.sealed) bad_at(at, "modifies a ", kind_name(parent.k), " that is already stored elsewhere");
    for (const ref& x : items) {
      if (x->depth + 1 > lim_.max_depth) bad_at(at, "containers nest deeper than ", lim_.max_depth, " levels");
      if (x->depth + 1 > parent.depth) parent.depth = x->depth + 1;
    }
  }
  value& target(std::size_t at, kind k, const char* op) {
    if (stack_.size() <= marks_floor()) bad_at(at, op, " needs a ", kind_name(k), " on the stack");
    value& t = *stack_.back();
    if (t.k != k) bad_at(at, op, " applies to a ", kind_name(k), ", found a ", kind_name(t.k));
    return t;
  }

  // ---- stack
  std::size_t marks_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(ref v, std::size_t at) {
    if (stack_.size() >= in_.size()) bad_at(at, "stack overflow");
    stack_.push_back(std::move(v));
  }
  ref pop(std::size_t at, const char* op) {
    if (stack_.size() <= marks_floor()) bad_at(at, op, " pops an empty stack");
    ref v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  std::vector<ref> pop_mark(std::size_t at, const char* op) {
    if (marks_.empty()) bad_at(at, op, " without a MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ref> out(std::make_move_iterator(stack_.begin() + std::ptrdiff_t(m)), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return out;
  }
  ref make_tuple(std::vector<ref> items, std::size_t at) {
    ref t = make(kind::tuple);
    adopt(*t, items, at);
    t->items = std::move(items);
    return t;
  }
  void append(value& list, std::vector<ref> items, std::size_t at) {
    adopt(list, items, at);
    for (auto& x : items) list.items.push_back(std::move(x));
  }
  void set_items(value& dict, std::vector<ref> kv, std::size_t at) {
    if (kv.size() % 2) bad_at(at, "SETITEMS with an odd number of values");
    adopt(dict, kv, at);
    for (std::size_t j = 0; j < kv.size(); j += 2) dict.entries.emplace_back(std::move(kv[j]), std::move(kv[j + 1]));
  }

  // ---- memo
  void put(std::uint64_t idx, std::size_t at) {
    if (stack_.size() <= marks_floor()) bad_at(at, "memo PUT with an empty stack");
    memo_[idx] = stack_.back();
  }
  void get(std::uint64_t idx, std::size_t at) {
    const auto it = memo_.find(idx);
    if (it == memo_.end()) bad_at(at, "memo GET of index ", idx, ", which was never PUT (", memo_.size(), " entries)");
    push(it->second, at);
  }

  // ---- globals and calls
  void global(std::string module, std::string name, std::size_t at) {
    std::string full = module + "." + name;
    if (!allowed_global(full))
      fail("refusing to load '", full, "' from ", where_,
           ": only tensors, storages and an allowlist of containers are accepted (no code is run)");
    push(make_str(kind::global, std::move(full)), at);
  }

  ref call(const value& fn, const value& args, std::size_t at) {
    if (fn.k != kind::global) bad_at(at, "REDUCE calls a ", kind_name(fn.k), ", not an allowlisted global");
    if (args.k != kind::tuple) bad_at(at, "REDUCE arguments of '", fn.s, "' are a ", kind_name(args.k), ", not a tuple");
    const auto& a = args.items;
    if (fn.s == "collections.OrderedDict") {
      if (!a.empty()) bad_at(at, "collections.OrderedDict is called with ", a.size(), " arguments; only OrderedDict() is accepted");
      return make(kind::dict);
    }
    if (fn.s == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a, at);
    if (fn.s == "torch._utils._rebuild_parameter" || fn.s == "torch._utils._rebuild_parameter_with_state") {
      const std::size_t n = fn.s == "torch._utils._rebuild_parameter" ? 3 : 4;
      if (a.size() != n || a[0]->k != kind::tensor || a[1]->k != kind::boolean)
        bad_at(at, fn.s, " expects (tensor, requires_grad", n == 4 ? ", hooks, state)" : ", hooks)");
      return a[0];
    }
    fail("refusing to call '", fn.s, "' from ", where_, ": it is allowlisted as a value, not as a function");
  }

  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  ref rebuild_tensor(const std::vector<ref>& a, std::size_t at) {
    const char* what = "torch._utils._rebuild_tensor_v2";
    if (a.size() != 6 && a.size() != 7) bad_at(at, what, " expects 6 or 7 arguments, found ", a.size());
    if (a[0]->k != kind::storage) bad_at(at, what, ": argument 1 must be a storage, found a ", kind_name(a[0]->k));
    if (a[1]->k != kind::integer || a[1]->i < 0) bad_at(at, what, ": storage offset must be a non-negative int");
    auto t = std::make_shared<tensor_ref>();
    t->storage = a[0];
    t->offset = std::uint64_t(a[1]->i);
    t->shape = int_tuple(*a[2], at, "size");
    t->strides = int_tuple(*a[3], at, "stride");
    if (t->shape.size() != t->strides.size())
      bad_at(at, what, ": size has ", t->shape.size(), " dimensions but stride has ", t->strides.size());
    if (a[4]->k != kind::boolean) bad_at(at, what, ": requires_grad must be a bool");
    if (a[5]->k != kind::dict || !a[5]->entries.empty()) bad_at(at, what, ": backward hooks must be an empty OrderedDict");
    ref v = make(kind::tensor);
    v->tensor = std::move(t);
    return v;
  }
  std::vector<std::int64_t> int_tuple(const value& v, std::size_t at, const char* what) {
    if (v.k != kind::tuple) bad_at(at, "tensor ", what, " must be a tuple of ints, found a ", kind_name(v.k));
    if (v.items.size() > lim_.max_dims) bad_at(at, "tensor ", what, " has ", v.items.size(), " dimensions");
    std::vector<std::int64_t> out;
    for (const ref& x : v.items) {
      if (x->k != kind::integer || x->i < 0) bad_at(at, "tensor ", what, " must hold non-negative ints");
      out.push_back(x->i);
    }
    return out;
  }

  // ('storage', torch.<X>Storage, key, location, numel)
  ref persistent_load(const value& pid, std::size_t at) {
    const auto& a = pid.items;
    if (pid.k != kind::tuple || a.size() != 5 || a[0]->k != kind::string || a[0]->s != "storage")
      bad_at(at, "persistent id must be ('storage', type, key, location, numel)");
    if (a[1]->k != kind::global || a[1]->s.compare(0, 6, "torch.") != 0)
      bad_at(at, "persistent id names no torch storage class");
    auto s = std::make_shared<storage_ref>();
    s->dtype = storage_class_dtype(std::string_view(a[1]->s).substr(6));
    if (s->dtype.empty()) bad_at(at, "'", a[1]->s, "' is not a storage class");
    if (a[2]->k != kind::string || a[3]->k != kind::string || a[4]->k != kind::integer || a[4]->i < 0)
      bad_at(at, "persistent id needs a str key, a str location and a non-negative numel");
    s->key = a[2]->s;
    s->location = a[3]->s;
    s->numel = std::uint64_t(a[4]->i);
    ref v = make(kind::storage);
    v->storage = std::move(s);
    return v;
  }

  // BUILD sets an object's state. The one use in a state dict is OrderedDict._metadata (a dict of
  // per-module versions), which Muninn does not need: accepted on a dict and dropped.
  void build(std::size_t at) {
    ref state = pop(at, "BUILD");
    if (stack_.size() <= marks_floor()) bad_at(at, "BUILD without an object");
    const value& obj = *stack_.back();
    const bool dict_state = state->k == kind::dict || state->k == kind::none ||
                            (state->k == kind::tuple && state->items.size() == 2);
    if (obj.k != kind::dict || !dict_state)
      bad_at(at, "BUILD sets the state of a ", kind_name(obj.k), "; only an OrderedDict's attributes are accepted");
  }

  void step(std::uint8_t op, std::size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        const int v = u8();
        if (v < 2 || v > 5) bad_at(at, "pickle protocol ", v, " (torch.save writes 2)");
        break;
      }
      case 0x95: uint_le(8); break;  // FRAME: a length hint only
      case '}': push(make(kind::dict), at); break;
      case ']': push(make(kind::list), at); break;
      case ')': push(make(kind::tuple), at); break;
      case '(':
        if (marks_.size() >= lim_.max_marks) bad_at(at, "more than ", lim_.max_marks, " nested MARKs");
        marks_.push_back(stack_.size());
        break;
      case 'X': push(make_str(kind::string, bytes(uint_le(4))), at); break;  // BINUNICODE
      case 0x8c: push(make_str(kind::string, bytes(u8())), at); break;        // SHORT_BINUNICODE
      case 0x8d: push(make_str(kind::string, bytes(uint_le(8))), at); break;  // BINUNICODE8
      case 'T': push(make_str(kind::string, bytes(uint_le(4))), at); break;   // BINSTRING
      case 'U': push(make_str(kind::string, bytes(u8())), at); break;         // SHORT_BINSTRING
      case 'B': push(make_str(kind::bytes, bytes(uint_le(4))), at); break;    // BINBYTES
      case 'C': push(make_str(kind::bytes, bytes(u8())), at); break;          // SHORT_BINBYTES
      case 0x8e: push(make_str(kind::bytes, bytes(uint_le(8))), at); break;   // BINBYTES8
      case 'J': push(make_int(std::int32_t(std::uint32_t(uint_le(4)))), at); break;  // BININT
      case 'K': push(make_int(u8()), at); break;                                      // BININT1
      case 'M': push(make_int(std::int64_t(uint_le(2))), at); break;                  // BININT2
      case 0x8a: {                                                                    // LONG1
        const std::size_t n = u8();
        if (n > 8) bad_at(at, "LONG1 of ", n, " bytes does not fit 64 bits");
        std::uint64_t u = n ? uint_le(n) : 0;
        if (n && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~std::uint64_t(0) << (8 * n);  // sign-extend
        push(make_int(std::int64_t(u)), at);
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const std::uint8_t* p = take(8);
        std::uint64_t u = 0;
        for (int j = 0; j < 8; ++j) u = (u << 8) | p[j];
        ref v = make(kind::floating);
        std::memcpy(&v->f, &u, 8);
        push(std::move(v), at);
        break;
      }
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        ref v = make(kind::boolean);
        v->i = op == 0x88;
        push(std::move(v), at);
        break;
      }
      case 'N': push(make(kind::none), at); break;
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        const std::size_t n = std::size_t(op - 0x84);
        if (stack_.size() < marks_floor() + n) bad_at(at, "TUPLE", n, " needs ", n, " values on the stack");
        std::vector<ref> items(std::make_move_iterator(stack_.end() - std::ptrdiff_t(n)), std::make_move_iterator(stack_.end()));
        stack_.resize(stack_.size() - n);
        push(make_tuple(std::move(items), at), at);
        break;
      }
      case 't': push(make_tuple(pop_mark(at, "TUPLE"), at), at); break;
      case 'l': {
        ref l = make(kind::list);
        append(*l, pop_mark(at, "LIST"), at);
        push(std::move(l), at);
        break;
      }
      case 'd': {
        ref d = make(kind::dict);
        set_items(*d, pop_mark(at, "DICT"), at);
        push(std::move(d), at);
        break;
      }
      case 'a': {
        ref x = pop(at, "APPEND");
        std::vector<ref> one{std::move(x)};
        append(target(at, kind::list, "APPEND"), std::move(one), at);
        break;
      }
      case 'e': {
        std::vector<ref> xs = pop_mark(at, "APPENDS");
        append(target(at, kind::list, "APPENDS"), std::move(xs), at);
        break;
      }
      case 's': {
        ref v = pop(at, "SETITEM");
        ref k = pop(at, "SETITEM");
        std::vector<ref> kv{std::move(k), std::move(v)};
        set_items(target(at, kind::dict, "SETITEM"), std::move(kv), at);
        break;
      }
      case 'u': {
        std::vector<ref> kv = pop_mark(at, "SETITEMS");
        set_items(target(at, kind::dict, "SETITEMS"), std::move(kv), at);
        break;
      }
      case 'q': put(u8(), at); break;                          // BINPUT
      case 'r': put(uint_le(4), at); break;                    // LONG_BINPUT
      case 0x94: put(memo_.size(), at); break;                 // MEMOIZE
      case 'h': get(u8(), at); break;                          // BINGET
      case 'j': get(uint_le(4), at); break;                    // LONG_BINGET
      case 'c': {                                              // GLOBAL "module\nname\n"
        std::string module = line();
        std::string name = line();
        global(std::move(module), std::move(name), at);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        ref name = pop(at, "STACK_GLOBAL");
        ref module = pop(at, "STACK_GLOBAL");
        if (name->k != kind::string || module->k != kind::string) bad_at(at, "STACK_GLOBAL needs two strings");
        global(module->s, name->s, at);
        break;
      }
      case 'R': {
        ref args = pop(at, "REDUCE");
        ref fn = pop(at, "REDUCE");
        push(call(*fn, *args, at), at);
        break;
      }
      case 'b': build(at); break;
      case 'Q': {
        ref pid = pop(at, "BINPERSID");
        push(persistent_load(*pid, at), at);
        break;
      }
      default:
        bad_at(at, "opcode 0x", "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15],
               " is not accepted in a torch.save state dict");
    }
  }

  std::string_view in_;
  std::string where_;
  limits lim_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
  std::vector<ref> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, ref> memo_;
};

}  // namespace detail

/// \brief Unpickles `bytes` under the allowlist; `where` names the source in error messages.
/// \throws muninn::error for a refused global, a malformed or truncated pickle, or a broken limit
inline ref load(std::string_view bytes, const std::string& where, const limits& lim = {}) {
  return detail::machine(bytes, where, lim).run();
}

}  // namespace muninn::io::pickle
