// The family registry: from a path to a loaded model, with the errors a newcomer needs.

#include "muninn/frontend/registry.hpp"

#include <filesystem>
#include <system_error>

#include "muninn/io/config_json.hpp"
#include "muninn/io/json.hpp"
#include "common.hpp"

namespace muninn::frontend {
namespace fs = std::filesystem;

namespace {

template <class F>
family_entry entry_of() {
  return {F::name, F::display, F::what, &F::recognizes, &F::load, &F::redirect};
}

template <class... F>
std::vector<family_entry> table_of(family_list<F...>) {
  return {entry_of<F>()...};
}

std::string architectures(const io::json& cfg) {
  const io::json* a = cfg.find("architectures");
  if (!a || !a->is_array()) return "none";
  std::string s;
  for (std::size_t i = 0; i < a->size(); ++i) s += (i ? "," : "") + ((*a)[i].is_string() ? (*a)[i].as_string() : "?");
  return s;
}

// "Huginn and Llama" from family names.
std::string displays(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string d = names[i];
    for (const auto& e : family_table())
      if (names[i] == e.name) d = e.display;
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + d;
  }
  return s;
}

}  // namespace

std::string detail::string_field(const io::json& cfg, const char* key, const std::string& fallback) {
  const io::json* v = cfg.find(key);
  return v && v->is_string() ? v->as_string() : fallback;
}

model_folder model_folder::open(const std::string& path, const std::string& flag, const std::string& mor_yaml) {
  std::error_code ec;
  model_folder f;
  f.path = path;
  f.mor_yaml = mor_yaml;
  if (path.empty()) fail_as(error_kind::usage, flag, " is empty");
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail_as(error_kind::usage, flag, ": '", path, "' does not exist");
  if (fs::is_directory(st)) {
    f.dir = path;
  } else {
    const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (!fs::is_regular_file(st) || !fs::exists(parent / "all_config.yaml", ec))
      fail_as(error_kind::usage, flag, ": '", path, "' is a file; give the model's folder (",
              fs::path(path).filename().string() == "config.json" ? "the one holding this config.json" : "config.json and weights",
              ")");
    f.dir = parent.string();
    f.step_file = path;
  }
  f.trm_run = fs::exists(fs::path(f.dir) / "all_config.yaml", ec);
  f.config_path = io::config_json_path(f.dir);
  if (fs::exists(f.config_path, ec)) {
    if (!fs::is_regular_file(f.config_path, ec))
      fail_as(error_kind::config, f.config_path, " is not a regular file");
    auto cfg = std::make_shared<io::json>(as_kind(error_kind::config, [&] { return io::read_json_file(f.config_path); }));
    if (!cfg->is_object()) fail_as(error_kind::config, f.config_path, ": config must be a JSON object");
    f.config = std::move(cfg);
  }
  return f;
}

const std::vector<family_entry>& family_table() {
  static const std::vector<family_entry> table = table_of(families{});
  return table;
}

std::string supported_families() {
  return "Huginn (config.json with model_type huginn_raven), Llama (LlamaForCausalLM), Mixture-of-Recursions (a Llama "
         "config.json with a mor block, or --config YAML), CALM (config.json of a CALM model or autoencoder) and TRM / "
         "HRM (a run folder with all_config.yaml)";
}

const family_entry& identify(const model_folder& f) {
  for (const auto& e : family_table())
    if (e.recognizes(f)) return e;
  if (!f.config)
    fail_as(error_kind::usage, "'", f.dir, "' holds no config.json (nor all_config.yaml): not a model folder this build runs; ",
            "it runs ", supported_families());
  fail_as(error_kind::config, f.config_path, ": model_type '", detail::string_field(*f.config, "model_type", "none"),
          "' (architectures ", architectures(*f.config), ") is not supported; this build runs ", supported_families());
}

void check_applicable(const family_entry& family, const option_values& o) {
  const std::string redirect = family.redirect(o.op());
  if (!redirect.empty()) fail_as(error_kind::usage, redirect);
  for (const auto& [name, value] : o.given()) {
    const option_spec* s = find_option(o.op(), name);
    if (!s || s->families.empty()) continue;
    bool applies = false;
    for (const auto& fam : s->families) applies = applies || fam == family.name;
    if (!applies)
      fail_as(error_kind::usage, o.spelled(name), " applies to ", displays(s->families), " checkpoints; this is ",
              family.what);
  }
}

const family_entry& family_of(const loaded_model& m) {
  for (const auto& e : family_table())
    if (m.info().family == e.name) return e;
  fail("family_of: no family named '", m.info().family, "' in this build");
}

void check_call(const loaded_model& m, const option_values& o) {
  o.validate();
  check_applicable(family_of(m), o);
}

std::unique_ptr<loaded_model> open_model(const std::string& path, const option_values& o, const std::string& flag) {
  o.validate();
  const std::string yaml = find_option(o.op(), "config") && o.has("config") ? o.text("config") : "";
  const model_folder f = model_folder::open(path, flag, yaml);
  const family_entry& family = identify(f);
  check_applicable(family, o);
  return family.load(f, o);
}

// ---- loaded_model's defaults: the operation is not run by this family

void loaded_model::not_run(operation op) const {
  const std::string r = family_of(*this).redirect(op);
  if (!r.empty()) fail_as(error_kind::usage, r);
  fail_as(error_kind::usage, info().display, " checkpoints do not run ", operation_name(op));
}

forward_result loaded_model::forward(const std::vector<std::int32_t>&, const option_values&,
                                     const std::vector<std::string>&) const {
  not_run(operation::forward);
}
std::vector<forward_result> loaded_model::forward_batch(const std::vector<std::vector<std::int32_t>>& seqs,
                                                        const option_values& o,
                                                        const std::vector<std::string>& taps) const {
  std::vector<forward_result> out;
  for (const auto& s : seqs) out.push_back(forward(s, o, taps));
  return out;
}

void loaded_model::check_taps(const std::vector<std::string>& names) const {
  const std::vector<tap_spec> offered = taps();
  for (const auto& n : names) {
    bool found = false;
    for (const auto& t : offered) found = found || t.name == n;
    if (found) continue;
    std::string list;
    for (const auto& t : offered) list += (list.empty() ? "" : ", ") + t.name;
    fail_as(error_kind::usage, "unknown tap '", n, "': ", info().display, " checkpoints offer ",
            list.empty() ? std::string("no taps") : list);
  }
}

std::vector<std::int32_t> stop_ids(const loaded_model& m, const option_values& o) {
  std::vector<std::int32_t> stops;
  if (find_option(o.op(), "stop") && o.has("stop")) stops = o.ids("stop");
  if (!(find_option(o.op(), "ignore-eos") && o.flag("ignore-eos")))
    for (auto id : m.eos_ids()) stops.push_back(id);
  return stops;
}
generation loaded_model::generate(const std::vector<std::int32_t>&, const option_values&,
                                  const std::vector<std::int32_t>&, const generate_callbacks&) const {
  not_run(operation::generate);
}
std::vector<generation> loaded_model::generate_batch(const std::vector<std::vector<std::int32_t>>& prompts,
                                                     const option_values& o,
                                                     const std::vector<std::int32_t>& stop_ids) const {
  std::vector<generation> out;
  for (const auto& p : prompts) out.push_back(generate(p, o, stop_ids, {}));
  return out;
}
score_result loaded_model::score(const std::vector<std::vector<std::int32_t>>&, const option_values&,
                                 const progress_fn&) const {
  not_run(operation::score);
}
std::unique_ptr<batch_engine> loaded_model::batch(const batch_limits&) const { not_run(operation::serve); }
brier_report loaded_model::brierlm(const std::vector<std::int32_t>&, const option_values&, const brier_block_fn&) const {
  not_run(operation::eval);
}

}  // namespace muninn::frontend
