// Model.generate: one prompt (ids or text) or a batch, greedy or sampled, with every option of
// `muninn generate`; Ctrl-C between tokens; stream=True hands the generation to a TokenStream.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "binding.hpp"
#include "muninn/frontend/registry.hpp"
#include "muninn/frontend/text.hpp"

namespace muninn::python {
namespace {

std::vector<std::int32_t> prompt_ids(const fe::loaded_model& m, nb::handle obj, const std::string& what) {
  if (nb::isinstance<nb::str>(obj)) return fe::encode_prompt(m, m.info().path, nb::cast<std::string>(obj), what);
  return ids_from(obj, what);
}

std::string generation_repr(const py_generation& g) {
  std::string s = "Generation(ids=" + nb::cast<std::string>(nb::repr(g.ids));
  if (!g.text.is_none()) s += ", text=" + nb::cast<std::string>(nb::repr(g.text));
  return s + ", stop_reason='" + g.stop_reason + "')";
}

nb::object generate(const py_model& self, nb::handle prompt, bool stream, const nb::kwargs& kwargs) {
  fe::option_values o = options_from(fe::operation::generate, kwargs, "generate");
  call_guard g(self.state, "generate");
  const fe::loaded_model& m = g.model();
  fe::check_call(m, o);
  std::vector<std::int32_t> stops = fe::stop_ids(m, o);
  if (is_batch(prompt, "prompt")) {
    if (stream) fail_as(error_kind::usage, "stream=True generates one prompt; give one sequence or one str");
    std::vector<std::vector<std::int32_t>> prompts;
    if (is_array(prompt)) prompts = batch_from(prompt, "prompt");
    std::size_t i = 0;
    for (nb::handle p : is_array(prompt) ? nb::list() : nb::borrow<nb::list>(nb::list(prompt)))
      prompts.push_back(prompt_ids(m, p, "prompt[" + std::to_string(i++) + "]"));
    std::vector<fe::generation> rs = without_gil([&] { return m.generate_batch(prompts, o, stops); });
    nb::list out;
    for (auto& r : rs) out.append(nb::cast(generation_of(m, std::move(r))));
    return out;
  }
  std::vector<std::int32_t> ids = prompt_ids(m, prompt, "prompt");
  if (stream) return start_stream(g, std::move(ids), std::move(o), std::move(stops));
  interrupt_check interrupt;
  fe::generate_callbacks cb;
  cb.cancelled = [&] { return interrupt(); };
  fe::generation r = without_gil([&] { return m.generate(ids, o, stops, cb); });
  interrupt.raise_if_interrupted();
  return nb::cast(generation_of(m, std::move(r)));
}

}  // namespace

py_generation generation_of(const fe::loaded_model& m, fe::generation&& g) {
  py_generation p;
  p.text = m.tokenizer() ? text_of(fe::decode(m, g.tokens)) : nb::none();
  p.ids = numpy_i32(std::move(g.tokens));
  p.stop_reason = g.stop_reason;
  p.steps = numpy_i32(std::move(g.steps));
  p.depths = numpy_i32(std::move(g.depths));
  p.notes = std::move(g.notes);
  return p;
}

void bind_generate(nb::module_& m, nb::class_<py_model>& cls) {
  nb::class_<py_generation>(m, "Generation", "What one generation produced.")
      .def_ro("ids", &py_generation::ids, "The new token ids, int32 (CALM: [PAD] removed).")
      .def_ro("text", &py_generation::text, "The new tokens decoded with the model's tokenizer (None without one).")
      .def_ro("stop_reason", &py_generation::stop_reason,
              "'length', 'eos' (CALM), 'stop' (a stop or end-of-sequence id) or 'cancelled'.")
      .def_ro("steps", &py_generation::steps,
              "int32: recurrence steps of each token (Huginn) or head samples of each chunk (CALM).")
      .def_ro("depths", &py_generation::depths, "int32: recursions each position ran (Mixture-of-Recursions).")
      .def_ro("notes", &py_generation::notes, "One-line reports (KV cache use, speculative decoding, sampler).")
      .def("__repr__", &generation_repr);
  cls.def("generate", &generate, nb::arg("prompt").none(), nb::kw_only(), nb::arg("stream") = false, nb::arg("options"),
          keep("generate(prompt, *, max_new_tokens, stream=False, **options) -> Generation | TokenStream | "
               "list[Generation]\n\n"
               "Generates from `prompt`: token ids (a list of ints or a 1-D integer array) or a str encoded with the "
               "model's tokenizer (with its BOS where the family's prompts get one). Greedy unless a sampling option "
               "is given; ends at max_new_tokens, at a `stop` id or at the end-of-sequence ids of "
               "generation_config.json (ignore_eos=True goes on). Returns a Generation.\n\n"
               "A list of prompts (or a 2-D array) generates each (batched where the family can; each row as it "
               "would be alone) and returns a list of Generation.\n"
               "stream=True returns a TokenStream at once that yields each token id as it is produced (the model "
               "runs on a worker thread); its .result is the Generation once it is exhausted.\n"
               "Ctrl-C stops a generation between tokens (KeyboardInterrupt).\n\n" +
               options_doc(fe::operation::generate)));
  bind_stream(m);
}

}  // namespace muninn::python
