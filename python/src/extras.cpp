// What some families run beside forward and generate: Model.score (mean NLL; Mixture-of-Recursions'
// depth histogram), Model.brierlm, CALM's autoencoder (ae_encode, ae_decode) and TRM / HRM's
// puzzles (Model.solve, muninn.solve).

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cmath>
#include <optional>

#include "binding.hpp"
#include "muninn/families/trm/puzzle_dataset.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/solve.hpp"
#include "muninn/frontend/text.hpp"

namespace muninn::python {
namespace {
using namespace nb::literals;

// One document: ids, or text encoded with the tokenizer (`add_special`: with its post-processor's tokens).
std::vector<std::int32_t> document(const fe::loaded_model& m, nb::handle obj, bool add_special, const std::string& what) {
  if (!nb::isinstance<nb::str>(obj)) return ids_from(obj, what);
  if (!m.tokenizer())
    fail_as(error_kind::usage, what, " is text, and ", m.info().path,
            "/tokenizer.json does not exist to encode it (give token ids instead)");
  return fe::encode_text(m, nb::cast<std::string>(obj), add_special);
}

// One document (ids or a str), or a list of them.
std::vector<std::vector<std::int32_t>> documents(const fe::loaded_model& m, nb::handle obj, bool add_special,
                                                 const std::string& what) {
  if (!is_batch(obj, what)) return {document(m, obj, add_special, what)};
  if (is_array(obj)) return batch_from(obj, what);
  std::vector<std::vector<std::int32_t>> out;
  std::size_t i = 0;
  for (nb::handle d : obj) out.push_back(document(m, d, add_special, what + "[" + std::to_string(i++) + "]"));
  return out;
}

nb::dict score(const py_model& self, nb::handle sequences, const nb::kwargs& kwargs) {
  const fe::option_values o = options_from(fe::operation::score, kwargs, "score", {"data"});
  call_guard g(self.state, "score");
  const fe::loaded_model& m = g.model();
  fe::check_call(m, o);
  const auto seqs = documents(m, sequences, false, "sequences");
  interrupt_check interrupt;
  const fe::score_result r =
      without_gil([&] { return m.score(seqs, o, [&](std::int64_t, std::int64_t) { interrupt.throw_if_interrupted(); }); });
  nb::dict d;
  d["sequences"] = r.sequences;
  d["tokens"] = r.tokens;
  d["predicted"] = r.predicted;
  d["nll"] = r.nll;
  d["ppl"] = std::exp(r.nll);
  if (!r.routing.empty()) {
    d["routing"] = r.routing;
    d["depth_counts"] = numpy_i64(std::vector<std::int64_t>(r.depth_counts));
  }
  return d;
}

nb::dict brierlm(const py_model& self, nb::handle data, const nb::kwargs& kwargs) {
  const fe::option_values o = options_from(fe::operation::eval, kwargs, "brierlm", {"data", "metric"});
  call_guard g(self.state, "brierlm");
  const fe::loaded_model& m = g.model();
  fe::check_call(m, o);
  std::vector<std::int32_t> stream;
  for (const auto& doc : documents(m, data, true, "data")) stream.insert(stream.end(), doc.begin(), doc.end());
  interrupt_check interrupt;
  const fe::brier_report r = without_gil([&] {
    return m.brierlm(stream, o, [&](std::int64_t, std::int64_t, const fe::brier4&) { interrupt.throw_if_interrupted(); });
  });
  nb::dict d;
  d["brierlm"] = r.brierlm;
  for (int n = 0; n < 4; ++n) d[("brier" + std::to_string(n + 1)).c_str()] = r.brier[std::size_t(n)];
  d["blocks"] = r.blocks;
  d["block_size"] = r.block_size;
  d["tokens"] = r.tokens;
  d["seed"] = r.seed;
  return d;
}

const fe::calm_extras& autoencoder(const fe::loaded_model& m, const char* method) {
  if (!m.calm())
    fail_as(error_kind::usage, method, "() runs CALM models and autoencoders; this is a ", m.info().display,
            " checkpoint");
  return *m.calm();
}

nb::tuple ae_encode(const py_model& self, nb::handle ids) {
  call_guard g(self.state, "ae_encode");
  const fe::calm_extras& ae = autoencoder(g.model(), "ae_encode");
  const std::vector<std::int32_t> padded = ae.padded(ids_from(ids, "ids"));
  const std::vector<float> z = without_gil([&] { return ae.encode(padded); });
  const std::size_t l = std::size_t(ae.latent_size()), n = z.size() / (2 * l);
  std::vector<float> mean(n * l), log_std(n * l);
  for (std::size_t c = 0; c < n; ++c)
    for (std::size_t j = 0; j < l; ++j) {
      mean[c * l + j] = z[c * 2 * l + j];
      log_std[c * l + j] = z[c * 2 * l + l + j];
    }
  return nb::make_tuple(numpy_f32(std::move(mean), {n, l}), numpy_f32(std::move(log_std), {n, l}));
}

nb::object ae_decode(const py_model& self, nb::handle latents, bool return_logits) {
  call_guard g(self.state, "ae_decode");
  const fe::calm_extras& ae = autoencoder(g.model(), "ae_decode");
  using floats = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
  nb::object np = nb::module_::import_("numpy");
  nb::object a = np.attr("ascontiguousarray")(latents, "dtype"_a = np.attr("float32"));
  if (nb::cast<int>(a.attr("ndim")) == 1) a = a.attr("reshape")(1, -1);
  floats z;
  if (!nb::try_cast(a, z, false)) throw nb::type_error("latents must be a float array [chunks, latent_size]");
  if (std::int64_t(z.shape(1)) != ae.latent_size())
    fail_as(error_kind::usage, "latents has rows of ", z.shape(1), " values; the latent size is ", ae.latent_size());
  const std::vector<float> values(z.data(), z.data() + z.size());
  const std::size_t K = std::size_t(ae.patch_size()), n = z.shape(0);
  if (return_logits) {
    std::vector<float> logits = without_gil([&] { return ae.decode_logits(values); });
    const std::size_t V = logits.size() / (n * K);
    return numpy_f32(std::move(logits), {n * K, V});
  }
  return numpy_i32(without_gil([&] { return ae.decode(values); }));
}

// Puzzles from arrays: inputs [N, seq_len], optional puzzle_identifiers [N] and labels [N, seq_len].
struct array_set {
  std::vector<std::vector<std::int32_t>> inputs, labels;
  std::vector<std::int32_t> ids;
};

array_set arrays_of(nb::handle data, std::int64_t L) {
  const auto get = [&](const char* key) -> nb::object {
    if (nb::isinstance<nb::dict>(data)) {
      nb::dict d = nb::borrow<nb::dict>(data);
      return d.contains(key) ? nb::object(d[key]) : nb::none();
    }
    return nb::none();
  };
  if (!nb::isinstance<nb::dict>(data))
    throw nb::type_error("data must be a dataset folder (str or os.PathLike) or a dict of arrays "
                         "{'inputs': [N, seq_len], 'puzzle_identifiers': [N], 'labels': [N, seq_len]}");
  for (auto [k, v] : nb::borrow<nb::dict>(data)) {
    const std::string key = nb::cast<std::string>(nb::str(k));
    if (key != "inputs" && key != "puzzle_identifiers" && key != "labels")
      fail_as(error_kind::usage, "data: unknown key '", key, "' (inputs, puzzle_identifiers, labels)");
  }
  array_set s;
  if (get("inputs").is_none()) fail_as(error_kind::usage, "data needs 'inputs' [N, seq_len]");
  s.inputs = batch_from(get("inputs"), "data['inputs']");
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    if (std::int64_t(s.inputs[i].size()) != L)
      fail_as(error_kind::usage, "data['inputs'][", i, "] has ", s.inputs[i].size(), " tokens; the model's puzzles have ",
              "seq_len ", L);
  s.ids = get("puzzle_identifiers").is_none() ? std::vector<std::int32_t>(s.inputs.size(), 0)
                                               : ids_from(get("puzzle_identifiers"), "data['puzzle_identifiers']");
  if (s.ids.size() != s.inputs.size())
    fail_as(error_kind::usage, "data['puzzle_identifiers'] holds ", s.ids.size(), " values for ", s.inputs.size(),
            " puzzles");
  if (!get("labels").is_none()) {
    s.labels = batch_from(get("labels"), "data['labels']");
    if (s.labels.size() != s.inputs.size())
      fail_as(error_kind::usage, "data['labels'] holds ", s.labels.size(), " rows for ", s.inputs.size(), " puzzles");
    for (std::size_t i = 0; i < s.labels.size(); ++i)
      if (std::int64_t(s.labels[i].size()) != L)
        fail_as(error_kind::usage, "data['labels'][", i, "] has ", s.labels[i].size(), " labels for seq_len ", L);
  } else {
    s.labels.assign(s.inputs.size(), {});
  }
  return s;
}

fe::puzzle_batch slice(const array_set& s, std::int64_t e0, std::int64_t e1) {
  fe::puzzle_batch b;
  for (std::int64_t e = e0; e < e1; ++e) {
    b.inputs.insert(b.inputs.end(), s.inputs[std::size_t(e)].begin(), s.inputs[std::size_t(e)].end());
    b.labels.push_back(s.labels[std::size_t(e)]);
    b.ids.push_back(s.ids[std::size_t(e)]);
  }
  return b;
}

nb::dict solve(const py_model& self, nb::handle data, const nb::kwargs& kwargs) {
  const fe::option_values o = options_from(fe::operation::solve, kwargs, "solve", {"data"});
  call_guard g(self.state, "solve");
  fe::check_call(g.model(), o);
  fe::trm_extras& m = *g.model().trm();
  const std::int64_t L = m.seq_len();
  std::optional<io::puzzle_dataset> dataset;
  array_set arrays;
  fe::batch_source source;
  std::optional<std::int64_t> ignore;
  std::int64_t available = 0;
  bool labelled = true;
  if (nb::isinstance<nb::str>(data) || nb::hasattr(data, "__fspath__")) {
    const std::string path = nb::cast<std::string>(nb::str(nb::module_::import_("os").attr("fspath")(data)));
    dataset.emplace(io::puzzle_dataset::open(fe::solve_split_dir(path, "data")));
    fe::check_dataset_fits(*dataset, m);
    available = dataset->num_examples();
    ignore = dataset->metadata().ignore_label_id;
    source = [&](std::int64_t e0, std::int64_t e1) { return fe::read_batch(*dataset, e0, e1); };
  } else {
    arrays = arrays_of(data, L);
    available = std::int64_t(arrays.inputs.size());
    labelled = available == 0 || !arrays.labels[0].empty();
    source = [&](std::int64_t e0, std::int64_t e1) { return slice(arrays, e0, e1); };
  }
  const fe::solve_plan plan = fe::plan_solve(m, o, available);
  interrupt_check interrupt;
  fe::solve_report r = without_gil([&] {
    return fe::run_solve(m, plan, source, ignore, [&](std::int64_t, const fe::puzzle_batch&, const fe::trm_solution&) {
      interrupt.throw_if_interrupted();
      return true;
    });
  });
  const auto N = std::size_t(r.puzzles);
  nb::dict d;
  d["puzzles"] = r.puzzles;
  d["halting"] = plan.halting;
  d["mean_steps"] = N ? double(r.steps) / double(N) : 0.0;
  d["steps"] = numpy_i32(std::move(r.puzzle_steps));
  d["predictions"] = numpy_i32(std::move(r.preds), {N, std::size_t(L)});
  if (labelled) {
    d["exact_accuracy"] = N ? double(r.exact) / double(N) : 0.0;
    d["token_accuracy"] = r.valid_tokens ? double(r.correct_tokens) / double(r.valid_tokens) : 0.0;
    std::vector<std::int32_t> solved;
    for (const auto& s : r.scores) solved.push_back(s.exact() ? 1 : 0);
    d["solved"] = numpy_i32(std::move(solved)).attr("astype")("bool");
  }
  return d;
}

}  // namespace

void bind_extras(nb::module_& m, nb::class_<py_model>& cls) {
  cls.def("score", &score, nb::arg("sequences"), nb::arg("options"),
          keep("score(sequences, **options) -> dict\n\n"
               "Mean next-token negative log-likelihood of `sequences` (a sequence of ids or a str, or a list of "
               "them; text is encoded without special tokens, as `muninn score` does): sequences, tokens, predicted, "
               "nll, ppl; a Mixture-of-Recursions model adds routing and depth_counts (depth_counts[d]: tokens that "
               "ran d recursions).\n\n" +
               options_doc(fe::operation::score, {"data"})));
  cls.def("brierlm", &brierlm, nb::arg("data"), nb::arg("options"),
          keep("brierlm(data, **options) -> dict\n\n"
               "BrierLM of a token stream (`muninn eval --metric brierlm`): `data` is one document (ids or a str) or "
               "a list of documents, concatenated; text is encoded with the tokenizer's special tokens. Returns "
               "brierlm, brier1..brier4, blocks, block_size, tokens and seed.\n\n" +
               options_doc(fe::operation::eval, {"data", "metric"})));
  cls.def("ae_encode", &ae_encode, nb::arg("ids"),
          "ae_encode(ids) -> (mean, log_std)\n\n"
          "CALM's chunk autoencoder: the latent of each chunk of K tokens, mean and log sigma, float32 [chunks, "
          "latent_size] each. A last partial chunk is filled with the pad id.");
  cls.def("ae_decode", &ae_decode, nb::arg("latents"), nb::kw_only(), nb::arg("return_logits") = false,
          "ae_decode(latents, *, return_logits=False)\n\n"
          "CALM's chunk decoder: latents [chunks, latent_size] (float) to the arg-max token ids [chunks * K], or "
          "with return_logits=True to the logits [chunks * K, vocab].");
  const char* solve_doc = keep(
      "solve(data, **options) -> dict\n\n"
      "Runs a TRM / HRM model on puzzles (`muninn solve`): `data` is a dataset folder (its test/ split) or a "
      "split folder, or a dict of arrays {'inputs': [N, seq_len], 'puzzle_identifiers': [N] (default 0), "
      "'labels': [N, seq_len] (optional)}. Returns puzzles, halting, mean_steps, steps [N] and predictions "
      "[N, seq_len] (int32), and with labels exact_accuracy, token_accuracy and solved [N] (bool).\n\n" +
      options_doc(fe::operation::solve, {"data"}));
  cls.def("solve", &solve, nb::arg("data"), nb::arg("options"), solve_doc);
  m.def("solve", [](const py_model& model, nb::handle data, const nb::kwargs& kw) { return solve(model, data, kw); },
        nb::arg("model"), nb::arg("data"), nb::arg("options"), solve_doc);
}

}  // namespace muninn::python
