#pragma once
/// \file
/// \brief `torch.save` checkpoints (`pytorch_model.bin`, training snapshots) read without Python
///        and without running any of the pickle's code.
///
/// Layout since PyTorch 1.6: an uncompressed ZIP whose entries share one top folder `<top>/`
/// (the file's stem or "archive"): `<top>/data.pkl` pickles the state dict, each tensor storage is
/// the entry `<top>/data/<key>`, and `<top>/byteorder` ("little") and `<top>/version` describe
/// them. The pickle goes through the restricted unpickler of pickle.hpp; tensors are views
/// (dtype, offset, sizes, strides) of storages, and several names may share one storage.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/mapped_file.hpp"
#include "muninn/io/pickle.hpp"
#include "muninn/io/zip.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "muninn/io/torch_file.hpp reads little-endian storages in place and needs a little-endian host"
#endif

namespace muninn::io {

/// \brief One tensor of a torch.save file: a contiguous view of a storage entry.
struct torch_tensor {
  std::string name;                     ///< state-dict key
  std::string dtype;                    ///< torch spelling: "float32", "bfloat16", "float16", "int64", ...
  std::vector<std::int64_t> shape;      ///< sizes
  std::vector<std::int64_t> strides;    ///< strides in elements (row-major: contiguous)
  std::string storage;                  ///< storage key: the entry `<top>/data/<storage>`
  std::string location;                 ///< device the storage was saved from ("cpu", "cuda:0"): informational
  std::uint64_t storage_offset = 0;     ///< first element inside the storage
  const void* data = nullptr;           ///< first byte, inside the mapping; may be unaligned
  std::size_t nbytes = 0;               ///< numel × element size
};

/// \brief Bytes per element of a torch dtype spelling, 0 when unknown.
inline std::size_t torch_dtype_size(std::string_view dtype) {
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "bfloat16" || dtype == "float16" || dtype == "int16") return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool") return 1;
  return 0;
}

/// \brief True when `path` starts with the ZIP local-header magic "PK\x03\x04" (what torch.save writes).
/// Refuses a path that is not a regular file, as every reader does (open_regular_file).
inline bool starts_with_zip_magic(const std::string& path) {
  const mapped_file f(path);
  return f.size() >= 4 && f.view().substr(0, 4) == std::string_view("PK\x03\x04", 4);
}

/// \brief A memory-mapped torch.save file with its state dict resolved to tensors. Move-only.
///
/// Opening validates everything: the ZIP structure, the pickle (allowlisted globals only), every
/// storage's size against its element count, and every tensor's byte range inside its storage.
/// Only contiguous tensors are accepted. Each storage is checked once however many keys share it.
class torch_file {
 public:
  /// \brief Maps and reads `path`; throws muninn::error naming the file (and key or global).
  explicit torch_file(const std::string& path) : zip_(path) {
    if (zip_.entries().empty()) fail(path, ": the ZIP archive is empty, not a torch.save file");
    const std::string& first = zip_.entries().front().name;
    top_ = first.substr(0, first.find('/'));
    const zip_entry* pkl = zip_.find(top_ + "/data.pkl");
    if (!pkl) fail(path, ": no ", top_, "/data.pkl entry; not a torch.save file");
    check_byteorder();
    if (const zip_entry* v = zip_.find(top_ + "/version")) version_ = read_version(*v);

    const std::string where = path + " (" + top_ + "/data.pkl)";
    const pickle::ref root =
        pickle::load(std::string_view(reinterpret_cast<const char*>(pkl->data), std::size_t(pkl->size)), where);
    if (root->k != pickle::kind::dict)
      fail(where, ": the pickle holds a ", pickle::kind_name(root->k), ", not a state dict (a dict of tensors)");
    for (const auto& [k, v] : root->entries) add_tensor(*k, *v);
  }

  /// \brief The path of the file.
  const std::string& path() const { return zip_.path(); }
  /// \brief The archive's top folder (the file's stem when torch.save wrote it, or "archive").
  const std::string& top() const { return top_; }
  /// \brief The serialization version from `<top>/version` (0 when absent).
  int version() const { return version_; }
  /// \brief All tensors in state-dict order.
  const std::vector<torch_tensor>& tensors() const { return tensors_; }
  /// \brief The tensor named `name`, or nullptr.
  const torch_tensor* find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }
  /// \brief Number of distinct storages the tensors use (aliased keys share one).
  std::size_t storage_count() const { return storages_.size(); }

 private:
  struct storage_info {
    std::string dtype;
    std::uint64_t numel = 0;
    const std::uint8_t* data = nullptr;
  };

  void check_byteorder() const {
    const zip_entry* b = zip_.find(top_ + "/byteorder");
    if (!b) return;  // files before byteorder existed are little-endian
    const std::string_view s(reinterpret_cast<const char*>(b->data), std::size_t(b->size));
    if (s != "little")
      fail(path(), ": byteorder is '", s.substr(0, 16), "'; Muninn reads little-endian torch.save files only");
  }

  int read_version(const zip_entry& v) const {
    std::string_view s(reinterpret_cast<const char*>(v.data), std::size_t(v.size));
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    int n = 0;
    if (s.empty() || s.size() > 6) fail(path(), ": ", top_, "/version is not a number");
    for (char c : s) {
      if (c < '0' || c > '9') fail(path(), ": ", top_, "/version is not a number");
      n = n * 10 + (c - '0');
    }
    return n;
  }

  // The storage behind `s`, checked on first use: its entry exists and holds exactly numel elements.
  const storage_info& storage(const pickle::storage_ref& s, const std::string& key) {
    const auto it = storages_.find(s.key);
    if (it != storages_.end()) {
      if (it->second.dtype != s.dtype || it->second.numel != s.numel)
        fail(path(), ": tensor '", key, "': storage '", s.key, "' is described twice with different types or sizes");
      return it->second;
    }
    const std::string entry_name = top_ + "/data/" + s.key;
    const zip_entry* e = zip_.find(entry_name);
    if (!e) fail(path(), ": tensor '", key, "': storage entry ", entry_name, " is missing");
    std::uint64_t nbytes = 0;
    if (__builtin_mul_overflow(s.numel, std::uint64_t(torch_dtype_size(s.dtype)), &nbytes) || nbytes != e->size)
      fail(path(), ": tensor '", key, "': storage ", entry_name, " holds ", e->size, " bytes, but its ", s.dtype,
           " storage of ", s.numel, " elements needs ", s.numel, " x ", torch_dtype_size(s.dtype));
    return storages_.emplace(s.key, storage_info{s.dtype, s.numel, e->data}).first->second;
  }

  void add_tensor(const pickle::value& k, const pickle::value& v) {
    if (k.k != pickle::kind::string)
      fail(path(), ": state dict has a key of type ", pickle::kind_name(k.k), "; expected str");
    const std::string& key = k.s;
    if (v.k != pickle::kind::tensor)
      fail(path(), ": state dict entry '", key, "' is a ", pickle::kind_name(v.k), ", not a tensor");
    const pickle::tensor_ref& t = *v.tensor;
    const pickle::storage_ref& sref = *t.storage->storage;
    const storage_info& st = storage(sref, key);

    torch_tensor out;
    out.name = key;
    out.dtype = sref.dtype;
    out.shape = t.shape;
    out.strides = t.strides;
    out.storage = sref.key;
    out.location = sref.location;
    out.storage_offset = t.offset;

    std::uint64_t numel = 1;
    bool overflow = false;
    for (auto d : t.shape) overflow |= __builtin_mul_overflow(numel, std::uint64_t(d), &numel);
    if (overflow) fail(path(), ": tensor '", key, "': its size overflows 64 bits");
    // Row-major: each stride is the product of the sizes after it (a size-1 dimension's stride is free).
    std::uint64_t expect = 1;
    bool contiguous = true;
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      if (t.shape[d] != 1 && std::uint64_t(t.strides[d]) != expect) contiguous = false;
      expect *= std::uint64_t(t.shape[d]);
    }
    if (numel > 0 && !contiguous)
      fail(path(), ": tensor '", key, "' is not contiguous (size ", dims(t.shape), ", stride ", dims(t.strides),
           "); Muninn reads row-major tensors only (save tensor.contiguous())");
    std::uint64_t end = 0;
    if (__builtin_add_overflow(t.offset, numel, &end) || end > st.numel)
      fail(path(), ": tensor '", key, "': elements [", t.offset, ", ", t.offset, " + ", numel, ") lie outside its storage '",
           sref.key, "' of ", st.numel, " elements");
    const std::size_t esize = torch_dtype_size(sref.dtype);
    out.data = st.data + t.offset * esize;  // in range: offset + numel <= storage numel
    out.nbytes = std::size_t(numel * esize);

    if (!index_.emplace(key, tensors_.size()).second) fail(path(), ": state dict key '", key, "' appears twice");
    tensors_.push_back(std::move(out));
  }

  static std::string dims(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  zip_archive zip_;
  std::string top_;
  int version_ = 0;
  std::unordered_map<std::string, storage_info> storages_;
  std::vector<torch_tensor> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace muninn::io
