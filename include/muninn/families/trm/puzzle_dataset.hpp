#pragma once
/// \file
/// \brief Puzzle datasets in the `.npy` layout of the TRM / HRM reference builders (Sudoku, Maze,
/// ARC), memory-mapped and validated.
///
/// A split folder (`…/test`, `…/train`) holds `dataset.json` and, for each set named in its
/// `sets` (the builders write one, `all`), five arrays:
///
/// | file | dtype | shape | meaning |
/// |---|---|---|---|
/// | `{set}__inputs.npy` | uint8, int32 or int64 | [N, seq_len] | example tokens |
/// | `{set}__labels.npy` | uint8, int32 or int64 | [N, seq_len] | target tokens |
/// | `{set}__puzzle_identifiers.npy` | int32 or int64 | [P] | puzzle p's row of the puzzle-embedding table |
/// | `{set}__puzzle_indices.npy` | int32 or int64 | [P + 1] | puzzle p owns examples [pi[p], pi[p+1]) |
/// | `{set}__group_indices.npy` | int32 or int64 | [G + 1] | group g owns puzzles [gi[g], gi[g+1]) |
///
/// The builders write uint8 tokens, except the augmented Sudoku train split (int64), and int32
/// indices. Opening checks everything the arrays index with, so that nothing read later can fall
/// outside a mapping or a table: shapes against each other and against `seq_len`, the index
/// arrays start at 0, never decrease and end at N (puzzle_indices) and P (group_indices), every
/// puzzle identifier lies in [0, num_puzzle_identifiers), and (unless turned off) every token lies
/// in [0, vocab_size) (a label may also equal `ignore_label_id`). Sizes from `dataset.json` are
/// bounded by io::load_limits. Every error names the file and the offending value. The arrays stay
/// in their read-only mappings; nothing is copied except the rows a caller asks for.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/mapped_file.hpp"
#include "muninn/io/npy.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "muninn/families/trm/puzzle_dataset.hpp reads little-endian arrays in place and needs a little-endian host"
#endif

namespace muninn::io {

/// \brief The integer element types a puzzle dataset array may be stored in.
enum class puzzle_dtype : std::uint8_t {
  u8,   ///< '|u1' (numpy uint8)
  i32,  ///< '<i4'
  i64,  ///< '<i8'
};

/// \brief numpy's name of the type: "uint8", "int32" or "int64".
inline const char* puzzle_dtype_name(puzzle_dtype t) {
  switch (t) {
    case puzzle_dtype::u8: return "uint8";
    case puzzle_dtype::i32: return "int32";
    case puzzle_dtype::i64: return "int64";
  }
  return "?";
}

/// \brief Bytes per element of `t`.
inline std::size_t puzzle_dtype_size(puzzle_dtype t) {
  return t == puzzle_dtype::u8 ? 1 : t == puzzle_dtype::i32 ? 4 : 8;
}

/// \brief A split's `dataset.json` (the builders' `PuzzleDatasetMetadata`).
struct puzzle_metadata {
  std::int64_t pad_id = 0;                       ///< token of padded inputs
  std::optional<std::int64_t> ignore_label_id;   ///< label value that does not count (null: none)
  std::int64_t blank_identifier_id = 0;          ///< puzzle identifier of padded rows
  std::int64_t vocab_size = 0;                   ///< token count (inputs and labels lie below it)
  std::int64_t seq_len = 0;                      ///< tokens per example
  std::int64_t num_puzzle_identifiers = 0;       ///< rows of the puzzle-embedding table
  std::int64_t total_groups = 0;                 ///< as written; not checked against the arrays
  double mean_puzzle_examples = 0;               ///< as written
  /// As written by TRM's builders; absent from HRM's. The Sudoku and Maze builders store the
  /// number of groups here, so it is informational only.
  std::optional<std::int64_t> total_puzzles;
  std::vector<std::string> sets;                 ///< set names: the files are `{set}__{field}.npy`
};

/// \brief Options of puzzle_dataset::open.
struct puzzle_dataset_options {
  /// Scan every input and label token at open (sequential reads of the mappings). When false,
  /// tokens are still checked by the copying accessors, but not by the views.
  bool check_tokens = true;
};

/// \brief Reads and validates a split's `dataset.json`.
/// \throws muninn::error naming the file and the field: missing or ill-typed fields, sizes outside
///         io::load_limits, pad_id outside the vocabulary, blank_identifier_id outside the table,
///         set names that are empty, repeated or not plain file-name parts
inline puzzle_metadata read_puzzle_metadata(const std::string& path) {
  const json root = read_json_file(path);
  MUNINN_CHECK(root.is_object(), path, ": dataset metadata must be a JSON object, found ", root.type_name());
  const auto field = [&](const char* key) -> const json& {
    const json* v = root.find(key);
    MUNINN_CHECK(v, path, ": missing field '", key, "'");
    return *v;
  };
  const auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi) {
    const json& v = field(key);
    MUNINN_CHECK(v.is_int(), path, ": field '", key, "' must be an integer, found ", v.type_name());
    const std::int64_t x = v.as_int();
    MUNINN_CHECK(x >= lo && x <= hi, path, ": field '", key, "' is ", x, ", outside [", lo, ", ", hi, "]");
    return x;
  };
  puzzle_metadata m;
  m.vocab_size = integer("vocab_size", 1, load_limits::max_vocab);
  m.seq_len = integer("seq_len", 1, load_limits::max_positions);
  m.num_puzzle_identifiers = integer("num_puzzle_identifiers", 1, load_limits::max_puzzle_identifiers);
  m.pad_id = integer("pad_id", 0, m.vocab_size - 1);
  m.blank_identifier_id = integer("blank_identifier_id", 0, m.num_puzzle_identifiers - 1);
  if (const json& v = field("ignore_label_id"); !v.is_null()) {
    MUNINN_CHECK(v.is_int() && v.as_int() >= INT32_MIN && v.as_int() <= INT32_MAX, path,
                 ": field 'ignore_label_id' must be an int32 or null");
    m.ignore_label_id = v.as_int();
  }
  m.total_groups = integer("total_groups", 0, INT64_MAX);
  const json& mean = field("mean_puzzle_examples");
  MUNINN_CHECK(mean.is_number(), path, ": field 'mean_puzzle_examples' must be a number, found ", mean.type_name());
  m.mean_puzzle_examples = mean.as_double();  // JSON numbers are finite; a mean count is not negative
  MUNINN_CHECK(m.mean_puzzle_examples >= 0, path, ": field 'mean_puzzle_examples' is ", m.mean_puzzle_examples,
               "; a mean count cannot be negative");
  if (root.find("total_puzzles")) m.total_puzzles = integer("total_puzzles", 0, INT64_MAX);
  const json& sets = field("sets");
  MUNINN_CHECK(sets.is_array() && sets.size() > 0, path, ": field 'sets' must be a non-empty list of names");
  for (const json& s : sets.as_array()) {
    MUNINN_CHECK(s.is_string(), path, ": field 'sets' holds a ", s.type_name(), ", not a name");
    const std::string& name = s.as_string();
    bool plain = !name.empty() && name.size() <= 255 && name != "." && name != "..";
    for (unsigned char c : name) plain = plain && c >= 0x20 && c != 0x7f && c != '/' && c != '\\';
    MUNINN_CHECK(plain, path, ": set name '", name.substr(0, 64), "' is not a plain file-name part");
    MUNINN_CHECK(std::find(m.sets.begin(), m.sets.end(), name) == m.sets.end(), path, ": set '", name,
                 "' is listed twice");
    m.sets.push_back(name);
  }
  return m;
}

/// \brief One integer array of a puzzle dataset, in place in its read-only mapping.
class puzzle_array {
 public:
  /// \brief An empty array.
  puzzle_array() = default;

  /// \brief Maps `path` and checks its header: little-endian uint8 / int32 / int64, C order,
  /// `ndim` dimensions, and a data size that equals what the shape needs.
  /// \param path the .npy file
  /// \param ndim the number of dimensions it must have
  /// \param allow_u8 whether uint8 is an accepted element type (tokens: yes; indices: no)
  puzzle_array(const std::string& path, std::size_t ndim, bool allow_u8) : file_(path) {
    const detail::npy_header_info h = detail::parse_npy_header(file_);
    if (h.descr == "|u1" && allow_u8) type_ = puzzle_dtype::u8;
    else if (h.descr == "<i4") type_ = puzzle_dtype::i32;
    else if (h.descr == "<i8") type_ = puzzle_dtype::i64;
    else
      fail(path, ": .npy dtype '", h.descr, "' is not supported here (expected ", allow_u8 ? "'|u1', " : "",
           "'<i4' or '<i8')");
    MUNINN_CHECK(h.shape.size() == ndim, path, ": array has ", h.shape.size(), " dimensions ",
                 detail::shape_text(h.shape), ", expected ", ndim);
    const std::int64_t bytes = checked::nbytes(h.shape, std::int64_t(puzzle_dtype_size(type_)));
    MUNINN_CHECK(bytes >= 0, path, ": .npy shape ", detail::shape_text(h.shape), " overflows 64 bits");
    const std::uint64_t have = file_.size() - h.data_offset;
    MUNINN_CHECK(have == std::uint64_t(bytes), path, ": .npy data is ", have, " bytes but shape ",
                 detail::shape_text(h.shape), " of ", puzzle_dtype_name(type_), " needs ", bytes);
    shape_ = h.shape;
    data_ = file_.data() + h.data_offset;
  }

  /// \brief The file the array was read from.
  const std::string& path() const { return file_.path(); }
  /// \brief The stored element type.
  puzzle_dtype dtype() const { return type_; }
  /// \brief Extents.
  const std::vector<std::int64_t>& shape() const { return shape_; }
  /// \brief Extent of the first dimension.
  std::int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  /// \brief Element `i` of the flattened array, widened to int64 (no range check on `i`).
  std::int64_t at(std::int64_t i) const { return load(data_, type_, i); }
  /// \brief First byte of the elements, inside the mapping (may be unaligned).
  const std::uint8_t* data() const { return data_; }

  /// \brief Element `i` of an array of type `t` stored at `p`, read without alignment assumptions.
  static std::int64_t load(const std::uint8_t* p, puzzle_dtype t, std::int64_t i) {
    switch (t) {
      case puzzle_dtype::u8: return p[i];
      case puzzle_dtype::i32: {
        std::int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        return v;
      }
      case puzzle_dtype::i64: {
        std::int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        return v;
      }
    }
    return 0;
  }

 private:
  mapped_file file_;
  puzzle_dtype type_ = puzzle_dtype::i64;
  std::vector<std::int64_t> shape_;
  const std::uint8_t* data_ = nullptr;
};

/// \brief One example's tokens (inputs or labels), in place in the mapping, read as int32.
class token_view {
 public:
  /// \brief `n` tokens of type `t` starting at `p`.
  token_view(const std::uint8_t* p, puzzle_dtype t, std::int64_t n) : p_(p), t_(t), n_(n) {}
  /// \brief Number of tokens (seq_len).
  std::int64_t size() const { return n_; }
  /// \brief Token `k` (unchecked index; the value was range-checked at open unless
  /// puzzle_dataset_options::check_tokens was false).
  std::int32_t operator[](std::int64_t k) const { return std::int32_t(puzzle_array::load(p_, t_, k)); }
  /// \brief The stored element type.
  puzzle_dtype dtype() const { return t_; }
  /// \brief First byte of the stored row (may be unaligned).
  const std::uint8_t* bytes() const { return p_; }

 private:
  const std::uint8_t* p_;
  puzzle_dtype t_;
  std::int64_t n_;
};

/// \brief One set of a split of a puzzle dataset, memory-mapped and validated. Move-only.
///
/// Example i's puzzle is the p with puzzle_indices[p] <= i < puzzle_indices[p+1] (the last such p
/// when puzzles are empty, as numpy's `searchsorted(puzzle_indices, i, "right") - 1` in the
/// reference's test loader); its identifier is puzzle_identifiers[p].
class puzzle_dataset {
 public:
  /// \brief Opens the set `set_name` of the split folder `dir` (holding `dataset.json`); an empty
  /// `set_name` takes the only set `dataset.json` lists (an error when it lists several).
  /// \throws muninn::error naming the file and value for anything malformed (see the file comment)
  static puzzle_dataset open(const std::string& dir, const std::string& set_name = "",
                             const puzzle_dataset_options& options = {}) {
    puzzle_dataset d;
    d.dir_ = dir;
    d.meta_ = read_puzzle_metadata(dir + "/dataset.json");
    if (set_name.empty()) {
      if (d.meta_.sets.size() != 1) {
        std::string all;
        for (const auto& s : d.meta_.sets) all += (all.empty() ? "" : ", ") + s;
        fail(dir, "/dataset.json lists the sets ", all, "; name one");
      }
      d.set_ = d.meta_.sets.front();
    } else {
      MUNINN_CHECK(std::find(d.meta_.sets.begin(), d.meta_.sets.end(), set_name) != d.meta_.sets.end(), dir,
                   "/dataset.json has no set '", set_name, "'");
      d.set_ = set_name;
    }
    const std::string base = dir + "/" + d.set_ + "__";
    d.inputs_ = puzzle_array(base + "inputs.npy", 2, true);
    d.labels_ = puzzle_array(base + "labels.npy", 2, true);
    d.identifiers_ = puzzle_array(base + "puzzle_identifiers.npy", 1, false);
    d.puzzle_indices_ = puzzle_array(base + "puzzle_indices.npy", 1, false);
    d.group_indices_ = puzzle_array(base + "group_indices.npy", 1, false);
    d.validate(options);
    return d;
  }

  /// \brief The split folder.
  const std::string& dir() const { return dir_; }
  /// \brief The set that was opened.
  const std::string& set_name() const { return set_; }
  /// \brief The split's dataset.json.
  const puzzle_metadata& metadata() const { return meta_; }
  /// \brief N: examples (rows of inputs and labels).
  std::int64_t num_examples() const { return inputs_.rows(); }
  /// \brief P: puzzles (entries of puzzle_identifiers).
  std::int64_t num_puzzles() const { return identifiers_.rows(); }
  /// \brief G: groups.
  std::int64_t num_groups() const { return group_indices_.rows() - 1; }
  /// \brief Tokens per example.
  std::int64_t seq_len() const { return meta_.seq_len; }
  /// \brief How the inputs are stored.
  puzzle_dtype inputs_dtype() const { return inputs_.dtype(); }
  /// \brief How the labels are stored.
  puzzle_dtype labels_dtype() const { return labels_.dtype(); }

  /// \brief Example i's inputs in place (i must be < num_examples()).
  token_view inputs_view(std::int64_t i) const { return row(inputs_, i); }
  /// \brief Example i's labels in place.
  token_view labels_view(std::int64_t i) const { return row(labels_, i); }

  /// \brief Copies example i's seq_len() input tokens to `out`, each checked against vocab_size.
  void inputs(std::int64_t i, std::int32_t* out) const { copy(inputs_, i, out); }
  /// \brief Copies example i's seq_len() labels to `out`, each checked against vocab_size (or equal
  /// to ignore_label_id), raw: ignore_label_id is not translated to -100.
  void labels(std::int64_t i, std::int32_t* out) const { copy(labels_, i, out); }
  /// \brief Example i's inputs as a new vector.
  std::vector<std::int32_t> inputs(std::int64_t i) const {
    std::vector<std::int32_t> v(static_cast<std::size_t>(seq_len()));
    inputs(i, v.data());
    return v;
  }
  /// \brief Example i's labels as a new vector.
  std::vector<std::int32_t> labels(std::int64_t i) const {
    std::vector<std::int32_t> v(static_cast<std::size_t>(seq_len()));
    labels(i, v.data());
    return v;
  }

  /// \brief The puzzle example i belongs to.
  std::int64_t puzzle_of(std::int64_t i) const {
    check_example(i);
    std::int64_t lo = 0, hi = num_puzzles();  // the last p in [0, P) with puzzle_indices[p] <= i
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (puzzle_indices_.at(mid) <= i) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  /// \brief The puzzle identifier (row of the puzzle-embedding table) of example i.
  std::int32_t puzzle_identifier(std::int64_t i) const { return identifier_of_puzzle(puzzle_of(i)); }
  /// \brief The identifier of puzzle p.
  std::int32_t identifier_of_puzzle(std::int64_t p) const {
    MUNINN_CHECK(p >= 0 && p < num_puzzles(), identifiers_.path(), ": puzzle ", p, " is out of range (", num_puzzles(),
                 " puzzles)");
    return std::int32_t(identifiers_.at(p));
  }
  /// \brief The examples [first, last) of puzzle p.
  std::pair<std::int64_t, std::int64_t> puzzle_examples(std::int64_t p) const {
    MUNINN_CHECK(p >= 0 && p < num_puzzles(), puzzle_indices_.path(), ": puzzle ", p, " is out of range (",
                 num_puzzles(), " puzzles)");
    return {puzzle_indices_.at(p), puzzle_indices_.at(p + 1)};
  }
  /// \brief The puzzles [first, last) of group g.
  std::pair<std::int64_t, std::int64_t> group_puzzles(std::int64_t g) const {
    MUNINN_CHECK(g >= 0 && g < num_groups(), group_indices_.path(), ": group ", g, " is out of range (", num_groups(),
                 " groups)");
    return {group_indices_.at(g), group_indices_.at(g + 1)};
  }

 private:
  puzzle_dataset() = default;

  void check_example(std::int64_t i) const {
    MUNINN_CHECK(i >= 0 && i < num_examples(), inputs_.path(), ": example ", i, " is out of range (",
                 num_examples(), " examples)");
  }
  token_view row(const puzzle_array& a, std::int64_t i) const {
    check_example(i);
    const std::int64_t L = seq_len();
    return {a.data() + std::size_t(i * L) * puzzle_dtype_size(a.dtype()), a.dtype(), L};
  }
  // A token is in [0, vocab_size); a label may also be ignore_label_id.
  bool valid(const puzzle_array& a, std::int64_t t) const {
    return (t >= 0 && t < meta_.vocab_size) || (&a == &labels_ && meta_.ignore_label_id && t == *meta_.ignore_label_id);
  }
  void copy(const puzzle_array& a, std::int64_t i, std::int32_t* out) const {
    const token_view v = row(a, i);
    for (std::int64_t k = 0; k < v.size(); ++k) {
      const std::int64_t t = puzzle_array::load(v.bytes(), v.dtype(), k);
      if (!valid(a, t)) bad_token(a, i, k, t);
      out[k] = std::int32_t(t);
    }
  }
  [[noreturn]] void bad_token(const puzzle_array& a, std::int64_t i, std::int64_t k, std::int64_t t) const {
    fail(a.path(), ": token ", t, " of example ", i, " (position ", k, ") is outside the vocabulary [0, ",
         meta_.vocab_size, ")", &a == &labels_ && meta_.ignore_label_id ? " and is not ignore_label_id" : "");
  }

  // A 1-D index array: idx[0] = 0, non-decreasing, idx[last] = end.
  static void check_offsets(const puzzle_array& a, std::int64_t end, const char* counts) {
    MUNINN_CHECK(a.rows() >= 1, a.path(), ": needs at least one entry (the leading 0)");
    MUNINN_CHECK(a.at(0) == 0, a.path(), ": starts at ", a.at(0), ", not 0");
    for (std::int64_t j = 1; j < a.rows(); ++j)
      if (a.at(j) < a.at(j - 1))
        fail(a.path(), ": decreases at entry ", j, " (", a.at(j - 1), " then ", a.at(j), ")");
    MUNINN_CHECK(a.at(a.rows() - 1) == end, a.path(), ": ends at ", a.at(a.rows() - 1), " but there are ", end, " ",
                 counts);
  }

  void validate(const puzzle_dataset_options& options) const {
    const std::int64_t L = meta_.seq_len;
    for (const puzzle_array* a : {&inputs_, &labels_})
      MUNINN_CHECK(a->shape()[1] == L, a->path(), ": rows have ", a->shape()[1], " tokens but dataset.json says seq_len ",
                   L);
    MUNINN_CHECK(labels_.rows() == inputs_.rows(), labels_.path(), ": ", labels_.rows(), " rows but ",
                 inputs_.path(), " has ", inputs_.rows());
    MUNINN_CHECK(puzzle_indices_.rows() == num_puzzles() + 1, puzzle_indices_.path(), ": ", puzzle_indices_.rows(),
                 " entries but ", identifiers_.path(), " lists ", num_puzzles(), " puzzles (expected ",
                 num_puzzles(), " + 1)");
    check_offsets(puzzle_indices_, num_examples(), "examples");
    check_offsets(group_indices_, num_puzzles(), "puzzles");
    for (std::int64_t p = 0; p < num_puzzles(); ++p) {
      const std::int64_t id = identifiers_.at(p);
      if (id < 0 || id >= meta_.num_puzzle_identifiers)
        fail(identifiers_.path(), ": puzzle ", p, " has identifier ", id, ", outside [0, ", meta_.num_puzzle_identifiers,
             ") (num_puzzle_identifiers in dataset.json)");
    }
    if (!options.check_tokens) return;
    for (const puzzle_array* a : {&inputs_, &labels_}) {
      const std::int64_t n = a->rows() * L;  // fits: the file holds n elements
      const std::uint8_t* p = a->data();
      const puzzle_dtype t = a->dtype();
      if (t == puzzle_dtype::u8 && meta_.vocab_size >= 256) continue;  // every uint8 value is a token
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t v = puzzle_array::load(p, t, j);
        if (v < 0 || v >= meta_.vocab_size)
          if (!valid(*a, v)) bad_token(*a, j / L, j % L, v);
      }
    }
  }

  std::string dir_, set_;
  puzzle_metadata meta_;
  puzzle_array inputs_, labels_, identifiers_, puzzle_indices_, group_indices_;
};

}  // namespace muninn::io
