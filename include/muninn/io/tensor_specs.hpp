#pragma once
/// \file
/// \brief Checks a checkpoint against the list of tensors a family's layout expects, before any
/// weight is loaded: one report of every missing tensor, wrong shape and unexpected extra tensor.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/io/safetensors.hpp"

namespace muninn::io {

/// \brief One tensor a checkpoint is expected to hold.
struct tensor_spec {
  std::string name;                 ///< Hugging Face name, e.g. "transformer.core_block.0.attn.Wqkv.weight"
  std::vector<std::int64_t> shape;  ///< expected extents
  bool optional = false;            ///< may be absent (tied lm_head, freqs_cis); checked when present
  int longer_dim = -1;              ///< a dimension that may exceed shape[longer_dim] (longer RoPE table)
  std::string reason;               ///< the config values the shape follows from, for error messages
};


/// \brief The outcome of check_tensor_specs: the problems found, worded for a person.
struct tensor_spec_report {
  static constexpr std::size_t max_lines = 8;  ///< problem lines kept; the rest are only counted
  std::vector<std::string> problems;           ///< the first max_lines missing-tensor / wrong-shape lines
  std::size_t n_problems = 0;                  ///< all missing-tensor / wrong-shape problems
  std::vector<const tensor_info*> extras;      ///< every tensor the specs do not name, in checkpoint order

  /// \brief True when the checkpoint holds exactly the expected tensors with the expected shapes.
  bool ok() const { return n_problems == 0 && extras.empty(); }

  /// \brief One line per problem, then "(and N more problems)", then one line naming the first
  /// few unexpected tensors with their files.
  /// \param source the checkpoint's directory or file (checkpoint::source())
  /// \param layout the family's layout in words ("Huginn", "Llama"), named in the extras line
  std::string message(const std::string& source, const std::string& layout) const {
    std::string msg;
    for (std::size_t i = 0; i < problems.size(); ++i) msg += (i ? "\n" : "") + problems[i];
    if (n_problems > problems.size()) msg += "\n(and " + std::to_string(n_problems - problems.size()) + " more problems)";
    if (!extras.empty()) msg += std::string(msg.empty() ? "" : "\n") + extras_line(source, layout);
    return msg;
  }

 private:
  std::string extras_line(const std::string& source, const std::string& layout) const {
    constexpr std::size_t shown = 5;
    std::string names;
    for (std::size_t i = 0; i < extras.size() && i < shown; ++i)
      names += std::string(i ? ", " : "") + "'" + extras[i]->name + "' (in " + extras[i]->file + ")";
    return source + ": " + std::to_string(extras.size()) + " unexpected tensor(s) not in the " + layout +
           " layout: " + names + (extras.size() > shown ? ", ..." : "");
  }
};

namespace detail {

// True when `actual` matches `s.shape`, allowing s.longer_dim to be longer.
inline bool shape_matches(const std::vector<std::int64_t>& actual, const tensor_spec& s) {
  if (actual.size() != s.shape.size()) return false;
  for (std::size_t d = 0; d < actual.size(); ++d)
    if (actual[d] != s.shape[d] && !(int(d) == s.longer_dim && actual[d] > s.shape[d])) return false;
  return true;
}

}  // namespace detail

/// \brief Compares `ckpt` with `specs`: every non-optional spec present, every present spec of the
/// right shape, nothing else.
/// \param ckpt the opened checkpoint
/// \param specs the layout's tensors for the model's config
/// \param cfg_src the config file the shapes follow from, named with the spec's reason in each line
inline tensor_spec_report check_tensor_specs(const checkpoint& ckpt, const std::vector<tensor_spec>& specs,
                                             const std::string& cfg_src) {
  tensor_spec_report r;
  const auto report = [&](std::string line) {
    if (r.n_problems++ < tensor_spec_report::max_lines) r.problems.push_back(std::move(line));
  };
  std::unordered_set<std::string> expected;
  for (const tensor_spec& s : specs) {
    expected.insert(s.name);
    const tensor_info* t = ckpt.find(s.name);
    if (!t) {
      if (!s.optional)
        report(ckpt.source() + ": missing tensor '" + s.name + "' (expected shape " + shape_string(s.shape) + "); " +
               cfg_src + " (" + s.reason + ") implies it");
    } else if (!detail::shape_matches(t->shape, s)) {
      report(t->file + ": tensor '" + s.name + "' has shape " + shape_string(t->shape) + " but " + cfg_src + " (" +
             s.reason + ") implies " + shape_string(s.shape));
    }
  }
  for (const tensor_info& t : ckpt.tensors())
    if (!expected.count(t.name)) r.extras.push_back(&t);
  return r;
}

/// \brief True when two stored tensors are one storage record (a torch.save alias of tied
/// parameters) or have the same shape and equal values.
inline bool same_tensor(const checkpoint& ck, const std::string& a, const std::string& b) {
  const tensor_info &x = ck.get(a), &y = ck.get(b);
  if (x.shape != y.shape) return false;
  if (x.data == y.data && x.type == y.type) return true;
  return ck.read_f32(a) == ck.read_f32(b);
}

/// \brief Throws one muninn::error listing every problem check_tensor_specs finds (see
/// tensor_spec_report::message); returns quietly when there is none.
/// \param ckpt the opened checkpoint
/// \param specs the layout's tensors for the model's config
/// \param cfg_src the config file the shapes follow from
/// \param layout the family's layout in words, e.g. "Llama"
inline void validate_tensor_specs(const checkpoint& ckpt, const std::vector<tensor_spec>& specs,
                                  const std::string& cfg_src, const std::string& layout) {
  const tensor_spec_report r = check_tensor_specs(ckpt, specs, cfg_src);
  if (!r.ok()) throw error(r.message(ckpt.source(), layout));
}

}  // namespace muninn::io
