#pragma once
/// \file
/// \brief `--dump DIR [--taps a,b,...]`: writes every tap a run reaches (run_options::taps) as one .npy
/// per tap, step and call, and DIR/taps.json indexing them. The layout is documented in
/// docs/taps.md.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "muninn/core/error.hpp"
#include "muninn/frontend/options.hpp"
#include "muninn/io/json.hpp"
#include "muninn/io/json_writer.hpp"
#include "muninn/io/npy.hpp"
#include "muninn/model/taps.hpp"

namespace muninn::frontend {

/// \brief Whether `o` asks for a dump (`--taps` without `--dump` is a usage error).
inline bool wants_dump(const option_values& o) {
  if (!find_option(o.op(), "dump")) return false;
  if (o.has("taps") && !o.has("dump")) fail_as(error_kind::usage, o.spelled("taps"), " needs ", o.spelled("dump"), " DIR");
  return o.has("dump");
}

/// \brief The taps `--taps` names (empty: all of `available`), each checked: a name of
/// `available` or a dotted prefix of some (a usage error lists `available` otherwise).
inline std::vector<std::string> tap_selection(const option_values& o, const std::vector<std::string>& available) {
  if (!o.has("taps")) return {};
  std::vector<std::string> out;
  const std::string list = o.text("taps");
  std::size_t b = 0;
  while (b <= list.size()) {
    const std::size_t e = std::min(list.find(',', b), list.size());
    const std::string n = list.substr(b, e - b);
    bool known = false;
    for (const auto& a : available)
      known = known || a == n || (a.size() > n.size() && a.compare(0, n.size(), n) == 0 && a[n.size()] == '.');
    if (!known) {
      std::string names;
      for (const auto& a : available) names += (names.empty() ? "" : ", ") + a;
      fail_as(error_kind::usage, o.spelled("taps"), ": unknown tap '", n, "' (this model's taps: ", names,
              "; a prefix such as 'core' takes every 'core.' tap)");
    }
    out.push_back(n);
    b = e + 1;
  }
  return out;
}

/// \brief Writes the taps of a run to a folder: `<name>.<call>.npy` for taps outside the
/// recurrence, `<name>.step<S>.<call>.npy` for step S, `call` counting the model calls that
/// reached the same tap and step (0 for a single forward; generation: the prefill, then one per
/// new token). taps.json lists each file with its name, step, call, shape, dtype and positions.
class tap_dump {
 public:
  tap_dump(const option_values& o, const std::vector<std::string>& available)
      : dir_(o.text("dump")), names_(tap_selection(o, available)) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    const std::string probe = dir_ + "/taps.json";
    if (ec || !std::ofstream(probe))
      fail_as(error_kind::usage, o.spelled("dump"), ": cannot write to the folder '", dir_, "'",
              ec ? " (" + ec.message() + ")" : std::string());
  }
  tap_dump(const tap_dump&) = delete;
  tap_dump& operator=(const tap_dump&) = delete;

  /// \brief The run's tap options: this dump records what they select.
  tap_options options() {
    tap_options t;
    t.names = names_;
    t.on_tap = [this](const tap_event& e) { record(e); };
    return t;
  }

  /// \brief Writes taps.json; returns a line for the log.
  std::string finish() const {
    io::json::array_t files;
    for (const auto& f : files_) {
      io::json_object_builder b;
      b.add("file", f.file).add("name", f.name).add("step", f.step).add("call", f.call);
      b.add("shape", io::json_array(f.shape)).add("dtype", "float32");
      b.add("positions", io::json_array(f.positions));
      if (!f.sequences.empty()) b.add("sequences", io::json_array(f.sequences));
      files.push_back(b.build());
    }
    io::json_object_builder root;
    root.add("format", "muninn taps 1");
    root.add("files", io::json::make_array(std::move(files)));
    std::string text;
    io::write_json(text, root.build());
    std::ofstream out(dir_ + "/taps.json", std::ios::binary);
    out << text << "\n";
    MUNINN_CHECK(bool(out), "cannot write ", dir_, "/taps.json");
    return "wrote " + std::to_string(files_.size()) + " taps to " + dir_ + " (index: " + dir_ + "/taps.json)";
  }

 /// \brief Writes one tap: `data` of `shape` (row-major), row i belonging to `positions[i]`
  /// (token positions; sample indices for a puzzle batch) when given.
  /// `sequences`, when given, says each row's sequence in a call that ran several
  /// (tap_event::sequences); taps.json lists them beside the positions.
  void write(const std::string& name, std::int64_t step, const std::vector<std::int64_t>& shape, const float* data,
             const std::int64_t* positions = nullptr, const std::int64_t* sequences = nullptr) {
    entry f;
    f.name = name;
    f.step = step;
    f.call = calls_[{f.name, f.step}]++;
    f.shape = shape;
    if (positions && !shape.empty()) f.positions.assign(positions, positions + shape[0]);
    if (sequences && !shape.empty()) f.sequences.assign(sequences, sequences + shape[0]);
    f.file = f.name + (f.step >= 0 ? ".step" + std::to_string(f.step) : std::string()) + "." + std::to_string(f.call) +
             ".npy";
    io::write_npy(dir_ + "/" + f.file, data, shape);
    files_.push_back(std::move(f));
  }

 private:
  struct entry {
    std::string file, name;
    std::int64_t step = -1, call = 0;
    std::vector<std::int64_t> shape, positions, sequences;
  };

  void record(const tap_event& e) {
    write(std::string(e.name), e.step, {e.rows, e.cols}, e.data, e.positions, e.sequences);
  }

  std::string dir_;
  std::vector<std::string> names_;
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> calls_;
  std::vector<entry> files_;
};

}  // namespace muninn::frontend
