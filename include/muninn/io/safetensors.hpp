#pragma once
/// \file
/// \brief Safetensors checkpoints: one file or a sharded set behind model.safetensors.index.json.
///
/// Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
/// `{"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}`,
/// then the data section; offsets are relative to its first byte (file offset 8 + N).
/// Files are memory-mapped; tensors are converted only when read into a destination.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "muninn/core/dtype.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/checked.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/mapped_file.hpp"
#include "muninn/io/torch_file.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "muninn/io/safetensors.hpp reads little-endian data in place and needs a little-endian host"
#endif

namespace muninn::io {

/// \brief "[a, b, c]" for a shape, the same spelling as shape_t::str().
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// \brief One tensor of a checkpoint: where its bytes lie in a mapped file and how to read them.
struct tensor_info {
  std::string name;                 ///< name as stored (after any checkpoint::strip_prefix)
  dtype type = dtype::f32;          ///< storage type in the file
  std::vector<std::int64_t> shape;  ///< extents, row-major
  const void* data = nullptr;       ///< first byte inside the mapping; may be unaligned
  std::size_t nbytes = 0;           ///< numel() * dtype_size(type)
  std::string file;                 ///< path of the file holding it, for error messages

  /// \brief Number of elements (1 for a scalar); a zero extent anywhere makes it 0.
  ///
  /// safetensors_file checked at open that it fits int64 (it is at most the file's size).
  std::int64_t numel() const { return checked::numel(shape); }
};

namespace detail {

inline std::optional<dtype> parse_safetensors_dtype(std::string_view s) {
  if (s == "F32") return dtype::f32;
  if (s == "BF16") return dtype::bf16;
  if (s == "F16") return dtype::f16;
  return std::nullopt;
}

inline std::uint64_t read_u64_le(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Non-negative integer from a header field, with the file and tensor in the message.
inline std::uint64_t header_uint(const json& v, const std::string& file, const std::string& tensor, const char* field) {
  if (v.is_int() && v.as_int() >= 0) return static_cast<std::uint64_t>(v.as_int());
  if (v.is_number()) fail(file, ": tensor '", tensor, "': \"", field, "\" must hold non-negative integers, found ", v.as_double());
  fail(file, ": tensor '", tensor, "': \"", field, "\" must hold non-negative integers, found a ", v.type_name());
}

// A weight_map entry must name a file below the index's directory: no absolute path, no "..".
inline void check_relative_shard(const std::string& index_path, const std::string& tensor, const std::string& shard) {
  namespace fs = std::filesystem;
  const fs::path p(shard);
  bool up = false;
  for (const auto& part : p) up |= part == "..";
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory() || up)
    fail(index_path, ": weight_map entry for tensor '", tensor, "' names shard '", shard,
         "', which is outside the checkpoint directory (absolute paths and '..' are not allowed)");
}

// True when `p` equals `root` or lies below it; both already canonical.
inline bool path_within(const std::filesystem::path& p, const std::filesystem::path& root) {
  auto q = p.begin();
  for (const auto& part : root) {
    if (part.empty()) continue;  // a trailing separator
    if (q == p.end() || *q != part) return false;
    ++q;
  }
  return true;
}

// A shard that resolves (through symlinks) outside the checkpoint is refused. Two roots count as
// inside: the index's directory as named, and the directory the index itself resolves to — the
// Hugging Face cache keeps snapshot files as symlinks into a sibling blobs/ directory, where the
// shards and the index both resolve.
inline void check_contained(const std::string& index_path, const std::string& tensor, const std::string& shard,
                            const std::string& shard_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(shard_path, ec);
  if (ec) return;  // cannot resolve: opening it fails next with the system's reason
  std::error_code ec_named, ec_real;
  const fs::path named = fs::weakly_canonical(fs::absolute(index_path).parent_path(), ec_named);
  const fs::path real = fs::weakly_canonical(index_path, ec_real).parent_path();
  // A root that failed to resolve must not count: an empty path would contain everything.
  const auto inside = [&](const fs::path& root, const std::error_code& e) {
    return !e && root.has_root_directory() && path_within(resolved, root);
  };
  if (inside(named, ec_named) || inside(real, ec_real)) return;
  fail(index_path, ": weight_map entry for tensor '", tensor, "' names shard '", shard, "', which resolves to '",
       resolved.string(), "', outside the checkpoint directory");
}

}  // namespace detail

/// \brief One memory-mapped safetensors file with its validated header.
///
/// Opening checks everything a reader relies on: header length within the file and within the
/// format's 100 MB cap, header is a JSON object (duplicate names are a parse error), every tensor
/// has a supported dtype, non-negative shape whose byte size fits int64, offsets inside the data
/// section and exactly numel × dtype-size bytes, and — as the format requires — the tensors' byte
/// ranges tile the data section: no overlap, no gap, nothing after the last one. After that,
/// tensor_info::data can be read without checks.
class safetensors_file {
 public:
  /// \brief Maps and validates `path`; throws muninn::error naming the file (and tensor) on any defect.
  explicit safetensors_file(const std::string& path) : map_(path) {
    const std::size_t size = map_.size();
    if (size < 8)
      fail(path, ": file is ", size, " bytes, too short for a safetensors header (8-byte length + JSON)");
    const std::uint64_t header_len = detail::read_u64_le(map_.data());
    if (header_len > load_limits::max_safetensors_header)
      fail(path, ": safetensors header length ", header_len, " exceeds the format's limit of ",
           load_limits::max_safetensors_header, " bytes");
    if (header_len > size - 8)
      fail(path, ": safetensors header length ", header_len, " exceeds the ", size - 8,
           " bytes that follow it (truncated file or not a safetensors file)");
    const std::string_view header(reinterpret_cast<const char*>(map_.data()) + 8, std::size_t(header_len));
    const json root = parse_json(header, path + " (safetensors header)");
    if (!root.is_object()) fail(path, ": safetensors header must be a JSON object, found ", root.type_name());

    data_offset_ = 8 + std::size_t(header_len);
    const std::uint8_t* data_begin = map_.data() + data_offset_;
    const std::uint64_t data_size = size - data_offset_;
    tensors_.reserve(root.size());
    std::vector<byte_range> ranges;
    ranges.reserve(root.size());
    for (const auto& [name, entry] : root.as_object()) {
      if (name == "__metadata__") continue;  // free-form strings; nothing Muninn needs
      if (!entry.is_object()) fail(path, ": tensor '", name, "': header entry must be an object, found ", entry.type_name());
      const json* jt = entry.find("dtype");
      const json* js = entry.find("shape");
      const json* jo = entry.find("data_offsets");
      if (!jt || !js || !jo) fail(path, ": tensor '", name, "': header entry needs \"dtype\", \"shape\" and \"data_offsets\"");
      if (!jt->is_string()) fail(path, ": tensor '", name, "': \"dtype\" must be a string");
      const auto type = detail::parse_safetensors_dtype(jt->as_string());
      if (!type)
        fail(path, ": tensor '", name, "' has dtype ", jt->as_string(),
             ", which Muninn cannot read (supported: F32, BF16, F16)");

      tensor_info t;
      t.name = name;
      t.type = *type;
      t.file = path;
      if (!js->is_array()) fail(path, ": tensor '", name, "': \"shape\" must be an array");
      for (const json& d : js->as_array())
        t.shape.push_back(std::int64_t(detail::header_uint(d, path, name, "shape")));  // header_uint: <= INT64_MAX
      const std::int64_t signed_nbytes = checked::nbytes(t.shape, std::int64_t(dtype_size(t.type)));
      if (signed_nbytes < 0)
        fail(path, ": tensor '", name, "': shape ", shape_string(t.shape), " overflows 64 bits");
      const auto nbytes = std::uint64_t(signed_nbytes);

      if (!jo->is_array() || jo->size() != 2)
        fail(path, ": tensor '", name, "': \"data_offsets\" must be an array [begin, end]");
      const std::uint64_t begin = detail::header_uint((*jo)[0], path, name, "data_offsets");
      const std::uint64_t end = detail::header_uint((*jo)[1], path, name, "data_offsets");
      if (end < begin) fail(path, ": tensor '", name, "': data_offsets [", begin, ", ", end, "] end before they begin");
      if (end > data_size)
        fail(path, ": tensor '", name, "': data_offsets [", begin, ", ", end, "] reach past the end of the data section (",
             data_size, " bytes; truncated file?)");
      if (end - begin != nbytes)
        fail(path, ": tensor '", name, "': data_offsets [", begin, ", ", end, "] span ", end - begin, " bytes but ",
             jt->as_string(), " ", shape_string(t.shape), " needs ", nbytes);
      t.data = data_begin + begin;
      t.nbytes = std::size_t(nbytes);
      ranges.push_back({begin, end, tensors_.size()});
      index_.emplace(t.name, tensors_.size());
      tensors_.push_back(std::move(t));
    }
    check_tiling(ranges, data_size);
  }

  /// \brief The path this file was opened from.
  const std::string& path() const { return map_.path(); }
  /// \brief All tensors in header order.
  const std::vector<tensor_info>& tensors() const { return tensors_; }
  /// \brief The tensor named `name`, or nullptr.
  const tensor_info* find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }
  /// \brief File offset of the data section (8 + header length).
  std::size_t data_offset() const { return data_offset_; }

 private:
  struct byte_range {
    std::uint64_t begin, end;
    std::size_t tensor;
  };

  // The format requires the tensors to tile the data section: sorted by offset, each begins where
  // the previous ends, the first at 0 and the last at the section's end. Overlaps would let two
  // tensors alias, gaps and trailing bytes hide data no reader checks.
  void check_tiling(std::vector<byte_range>& ranges, std::uint64_t data_size) const {
    std::sort(ranges.begin(), ranges.end(),
              [](const byte_range& a, const byte_range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    std::uint64_t at = 0;
    const byte_range* prev = nullptr;
    const auto describe = [&](const byte_range& r) {
      return "tensor '" + tensors_[r.tensor].name + "' [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
    };
    for (const byte_range& r : ranges) {
      if (r.begin < at) fail(path(), ": ", describe(r), " overlaps ", describe(*prev));
      if (r.begin > at)
        fail(path(), ": ", describe(r), " leaves bytes [", at, ", ", r.begin, ") of the data section unused",
             prev ? " after " + describe(*prev) : std::string());
      at = r.end;
      prev = &r;
    }
    if (at != data_size)
      fail(path(), ": data section holds ", data_size, " bytes but the tensors cover only ", at,
           " (bytes after the last tensor)");
  }

  mapped_file map_;
  std::size_t data_offset_ = 0;
  std::vector<tensor_info> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// \brief All tensors of a checkpoint, from one safetensors file or an index plus shards.
///
/// Owns the mappings; tensor_info::data pointers stay valid while the checkpoint lives (moves included).
class checkpoint {
 public:
  /// \brief The file names open() looks for in a directory, in order.
  static constexpr const char* index_name = "model.safetensors.index.json";
  /// \brief The single-file name open() falls back to.
  static constexpr const char* single_name = "model.safetensors";
  /// \brief The torch.save file open() tries last in a directory (torch_file.hpp).
  static constexpr const char* torch_name = "pytorch_model.bin";

  /// \brief Opens a checkpoint.
  /// \param dir_or_file a directory holding model.safetensors.index.json (sharded) or
  ///        model.safetensors or pytorch_model.bin; or a path to a `*.json` index, to a single
  ///        safetensors file, or to a torch.save file of any name (recognized by its ZIP magic)
  /// \throws muninn::error for a missing file, a malformed file, a shard that disagrees with the
  ///         index, or a tensor name that appears twice
  static checkpoint open(const std::string& dir_or_file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(dir_or_file);
    const auto st = fs::status(p, ec);
    if (!fs::exists(st)) {
      if (ec && ec != std::errc::no_such_file_or_directory)
        fail("cannot access checkpoint path '", dir_or_file, "': ", ec.message());
      fail("checkpoint path '", dir_or_file, "' does not exist");
    }
    checkpoint c;
    c.source_ = dir_or_file;
    if (fs::is_directory(st)) {
      if (fs::exists(p / index_name)) {
        c.open_index((p / index_name).string());
      } else if (fs::exists(p / single_name)) {
        c.add_file(safetensors_file((p / single_name).string()));
      } else if (fs::exists(p / torch_name)) {
        c.add_torch_file(torch_file((p / torch_name).string()));
      } else {
        fail("no checkpoint in '", dir_or_file, "': looked for ", index_name, ", ", single_name, " and ", torch_name);
      }
    } else if (p.extension() == ".json") {
      c.open_index(dir_or_file);
    } else if (starts_with_zip_magic(dir_or_file)) {
      c.add_torch_file(torch_file(dir_or_file));
    } else {
      c.add_file(safetensors_file(dir_or_file));
    }
    return c;
  }

  /// \brief What open() was given: the directory or file, used in error messages.
  const std::string& source() const { return source_; }
  /// \brief The opened files (one, or the shards in index order).
  const std::vector<safetensors_file>& files() const { return files_; }
  /// \brief Number of tensors.
  std::size_t size() const { return tensors_.size(); }
  /// \brief All tensors (file order, then header order).
  const std::vector<tensor_info>& tensors() const { return tensors_; }

  /// \brief True when a tensor of that name exists.
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  /// \brief The tensor of that name, or nullptr.
  const tensor_info* find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }
  /// \brief The tensor of that name; throws "tensor 'x' not found in <source>".
  const tensor_info& get(const std::string& name) const {
    const tensor_info* t = find(name);
    if (!t) fail("tensor '", name, "' not found in ", source_);
    return *t;
  }
  /// \brief All tensor names (file order, then header order).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& t : tensors_) out.push_back(t.name);
    return out;
  }

  /// \brief Removes `prefix` from every name that starts with it (training checkpoints carry
  ///        wrappers such as "_orig_mod."); returns how many names changed.
  /// \throws muninn::error when a stripped name collides with an existing one
  std::size_t strip_prefix(std::string_view prefix) {
    std::size_t changed = 0;
    for (auto& t : tensors_) {
      if (t.name.compare(0, prefix.size(), prefix) != 0) continue;
      std::string stripped = t.name.substr(prefix.size());
      if (index_.count(stripped))
        fail(t.file, ": tensor '", t.name, "' becomes '", stripped, "' without its prefix, which already exists");
      const std::size_t i = index_.at(t.name);
      index_.erase(t.name);
      t.name = std::move(stripped);
      index_.emplace(t.name, i);
      ++changed;
    }
    return changed;
  }

  /// \brief Converts tensor `name` into `n` elements of T (float, bf16 or f16) at `dst`, then
  /// drops the tensor's pages of the mapped file from resident memory (release_mapped_pages), so
  /// that a loaded model is resident once, not beside its file; a later read maps them again.
  /// \throws muninn::error when the tensor is missing or `n` differs from its element count
  template <class T>
  void read_into(const std::string& name, T* dst, std::size_t n) const {
    const tensor_info& t = get(name);
    if (std::uint64_t(t.numel()) != n)
      fail(t.file, ": tensor '", name, "' has ", t.numel(), " elements (shape ", shape_string(t.shape),
           "), but the destination holds ", n);
    const std::size_t esize = dtype_size(t.type);
    if (reinterpret_cast<std::uintptr_t>(t.data) % esize == 0) {
      convert_to(dst, t.data, t.type, n);
      release_mapped_pages(t.data, t.nbytes);  // the copy is what stays resident, not the file too
      return;
    }
    // A header length that is not a multiple of 4 leaves the data unaligned; reading a float*
    // there is undefined, so stage through an aligned buffer.
    constexpr std::size_t chunk = 1 << 14;
    std::vector<std::uint32_t> staging(chunk);
    const auto* src = static_cast<const unsigned char*>(t.data);
    for (std::size_t i = 0; i < n; i += chunk) {
      const std::size_t m = std::min(chunk, n - i);
      std::memcpy(staging.data(), src + i * esize, m * esize);
      convert_to(dst + i, staging.data(), t.type, m);
    }
    release_mapped_pages(t.data, t.nbytes);
  }

  /// \brief Tensor `name` converted to float.
  std::vector<float> read_f32(const std::string& name) const {
    const tensor_info& t = get(name);
    std::vector<float> out(std::size_t(t.numel()));
    read_into(name, out.data(), out.size());
    return out;
  }

 private:
  void add_file(safetensors_file f) {
    files_.push_back(std::move(f));
    for (const tensor_info& t : files_.back().tensors()) {
      const auto it = index_.find(t.name);
      if (it != index_.end())
        fail("tensor '", t.name, "' appears in both '", tensors_[it->second].file, "' and '", t.file, "'");
      index_.emplace(t.name, tensors_.size());
      tensors_.push_back(t);
    }
  }

  // A torch.save file: its float tensors join the list, pointing into its mapping (kept in torch_files_).
  void add_torch_file(torch_file f) {
    for (const torch_tensor& tt : f.tensors()) {
      tensor_info t;
      t.name = tt.name;
      const std::string& d = tt.dtype;
      if (d != "float32" && d != "bfloat16" && d != "float16")
        fail(f.path(), ": tensor '", tt.name, "' has dtype ", d,
             ", which Muninn cannot read (supported: float32, bfloat16, float16)");
      t.type = d == "float32" ? dtype::f32 : d == "bfloat16" ? dtype::bf16 : dtype::f16;
      t.shape = tt.shape;
      t.data = tt.data;
      t.nbytes = tt.nbytes;
      t.file = f.path();
      if (!index_.emplace(t.name, tensors_.size()).second) fail(f.path(), ": tensor '", t.name, "' appears twice");
      tensors_.push_back(std::move(t));
    }
    torch_files_.push_back(std::move(f));
  }

  void open_index(const std::string& index_path) {
    namespace fs = std::filesystem;
    const json root = read_json_file(index_path);
    if (!root.is_object()) fail(index_path, ": expected a JSON object with a \"weight_map\"");
    const json* wm = root.find("weight_map");
    if (!wm || !wm->is_object()) fail(index_path, ": missing \"weight_map\" object (tensor name -> shard file)");
    const fs::path dir = fs::path(index_path).parent_path();

    std::unordered_map<std::string, std::string> shard_of;  // tensor -> shard file name
    std::vector<std::pair<std::string, std::string>> shards;  // (shard, first tensor), first-seen order
    std::unordered_map<std::string, std::size_t> shard_index;
    for (const auto& [name, file] : wm->as_object()) {
      if (!file.is_string() || file.as_string().empty())
        fail(index_path, ": weight_map entry for tensor '", name, "' must be a shard file name");
      detail::check_relative_shard(index_path, name, file.as_string());
      shard_of.emplace(name, file.as_string());
      if (shard_index.emplace(file.as_string(), shards.size()).second) shards.emplace_back(file.as_string(), name);
    }

    for (const auto& [shard, first_tensor] : shards) {
      const std::string shard_path = (dir / shard).string();
      detail::check_contained(index_path, first_tensor, shard, shard_path);
      std::optional<safetensors_file> f;
      try {
        f.emplace(shard_path);
      } catch (const error& e) {
        fail(index_path, ": cannot read shard '", shard, "' (holding tensor '", first_tensor, "'): ", e.what());
      }
      for (const tensor_info& t : f->tensors()) {
        const auto it = shard_of.find(t.name);
        if (it == shard_of.end())
          fail(shard_path, ": contains tensor '", t.name, "', which the weight_map of ", index_path, " does not list");
        if (it->second != shard)
          fail(shard_path, ": contains tensor '", t.name, "', which ", index_path, " maps to shard '", it->second, "'");
      }
      for (const auto& [name, file] : wm->as_object())
        if (file.as_string() == shard && !f->find(name))
          fail(index_path, ": maps tensor '", name, "' to shard '", shard, "', but ", shard_path, " has no such tensor");
      add_file(std::move(*f));
    }
  }

  std::string source_;
  std::vector<safetensors_file> files_;
  std::vector<torch_file> torch_files_;
  std::vector<tensor_info> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// \brief A tensor for write_safetensors: values as float, stored as `type`.
struct tensor_to_write {
  std::vector<std::int64_t> shape;  ///< extents; product must equal values.size()
  std::vector<float> values;        ///< row-major values
  dtype type = dtype::f32;          ///< storage type; BF16 and F16 round to nearest even
};

/// \brief Writes a safetensors file (header padded with spaces to 8 bytes, data in the given order).
/// \param path file to create or overwrite
/// \param tensors (name, tensor) pairs; names must be unique and not "__metadata__"
/// \param metadata optional string pairs stored under "__metadata__"
/// \throws muninn::error naming the file and tensor on invalid input or a failed write
inline void write_safetensors(const std::string& path,
                              const std::vector<std::pair<std::string, tensor_to_write>>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      if (i) header += ',';
      append_json_string(header, metadata[i].first);
      header += ':';
      append_json_string(header, metadata[i].second);
    }
    header += '}';
  }
  std::unordered_map<std::string, int> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__") fail(path, ": invalid tensor name '", name, "'");
    if (seen[name]++) fail(path, ": tensor '", name, "' given twice");
    for (auto d : t.shape)
      if (d < 0) fail(path, ": tensor '", name, "': negative extent in shape ", shape_string(t.shape));
    const std::int64_t n = checked::numel(t.shape);  // a wrapped product could equal values.size()
    if (n < 0) fail(path, ": tensor '", name, "': shape ", shape_string(t.shape), " overflows 64 bits");
    const auto numel = std::uint64_t(n);
    if (numel != t.values.size())
      fail(path, ": tensor '", name, "': shape ", shape_string(t.shape), " has ", numel, " elements but ",
           t.values.size(), " values were given");
    const std::uint64_t end = offset + numel * dtype_size(t.type);
    if (header.size() > 1) header += ',';
    append_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += dtype_name(t.type);
    header += "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot create '", path, "': ", std::strerror(errno));
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((std::uint64_t(header.size()) >> (8 * i)) & 0xff);
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(header.data(), std::streamsize(header.size()));
  std::vector<std::uint16_t> half;
  for (const auto& [name, t] : tensors) {
    if (t.type == dtype::f32) {
      out.write(reinterpret_cast<const char*>(t.values.data()), std::streamsize(t.values.size() * 4));
      continue;
    }
    half.resize(t.values.size());
    for (std::size_t i = 0; i < half.size(); ++i)
      half[i] = t.type == dtype::bf16 ? to_bf16(t.values[i]).bits : to_f16(t.values[i]).bits;
    out.write(reinterpret_cast<const char*>(half.data()), std::streamsize(half.size() * 2));
  }
  out.close();
  if (!out) fail("error writing '", path, "'");
}

}  // namespace muninn::io
