// Text in and out: Model.tokenizer (encode, decode) and Model.apply_chat_template, over the
// checkpoint's tokenizer.json and chat template. The tokenizer is safe to use from any thread,
// also while the model generates.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "binding.hpp"
#include "muninn/frontend/text.hpp"
#include "muninn/io/tokenizer.hpp"

namespace muninn::python {
namespace {

struct py_tokenizer {
  std::shared_ptr<model_state> state;
};

const io::tokenizer& tokenizer_of(const fe::loaded_model& m) {
  if (!m.tokenizer()) fail_as(error_kind::usage, m.info().path, " has no tokenizer.json");
  return *m.tokenizer();
}

std::vector<std::int32_t> encode(const py_tokenizer& t, const std::string& text, bool add_special_tokens) {
  const auto m = t.state->loaded();
  const io::tokenizer& tok = tokenizer_of(*m);
  return without_gil([&] { return tok.encode(text, add_special_tokens); });
}

nb::object decode(const py_tokenizer& t, nb::handle ids) {
  const auto m = t.state->loaded();
  std::vector<std::int32_t> v = ids_from(ids, "ids");
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0 || v[i] >= m->info().vocab_size)
      fail_as(error_kind::usage, "ids: token id ", v[i], " at index ", i, " is out of range for vocab_size ",
              m->info().vocab_size);
  return text_of(fe::decode(*m, v));
}

std::vector<fe::chat_turn> turns_of(nb::handle messages) {
  std::vector<fe::chat_turn> turns;
  if (!PyList_Check(messages.ptr()) && !PyTuple_Check(messages.ptr()))
    throw nb::type_error("messages must be a list of {'role': ..., 'content': ...} dicts");
  std::size_t i = 0;
  for (nb::handle msg : messages) {
    const std::string at = "messages[" + std::to_string(i++) + "]";
    if (!nb::isinstance<nb::dict>(msg)) throw nb::type_error((at + " must be a dict with 'role' and 'content'").c_str());
    nb::dict d = nb::borrow<nb::dict>(msg);
    for (const char* key : {"role", "content"})
      if (!d.contains(key) || !nb::isinstance<nb::str>(d[key]))
        throw nb::type_error((at + "['" + key + "'] must be a str").c_str());
    turns.push_back({nb::cast<std::string>(d["role"]), nb::cast<std::string>(d["content"])});
  }
  return turns;
}

nb::object apply_chat_template(const py_model& self, nb::handle messages, bool tokenize) {
  const auto m = self.state->loaded();
  const std::string dir = m->info().path;
  const std::string rendered = fe::render_chat(dir, turns_of(messages), "messages");
  if (!tokenize) return text_of(rendered);
  return nb::cast(fe::encode_rendered(*m, dir, rendered, "messages"));
}

}  // namespace

void bind_text(nb::module_& m, nb::class_<py_model>& cls) {
  nb::class_<py_tokenizer>(m, "Tokenizer", "The checkpoint's tokenizer.json (BPE, as Hugging Face tokenizers runs it).")
      .def("encode", &encode, nb::arg("text"), nb::arg("add_special_tokens") = false,
           "Token ids of `text`; add_special_tokens=True adds what the post-processor adds (a Llama BOS).")
      .def("decode", &decode, nb::arg("ids"), "The text of `ids` (special tokens kept).");
  cls.def_prop_ro(
      "tokenizer",
      [](const py_model& self) -> nb::object {
        return self.state->loaded()->tokenizer() ? nb::cast(py_tokenizer{self.state}) : nb::none();
      },
      "The model's Tokenizer, or None when the folder has no tokenizer.json.");
  cls.def("apply_chat_template", &apply_chat_template, nb::arg("messages"), nb::kw_only(), nb::arg("tokenize") = true,
          "apply_chat_template(messages, *, tokenize=True) -> list[int] | str\n\n"
          "Renders `messages` ([{'role': 'user', 'content': '...'}, ...]) with the checkpoint's chat template "
          "(chat_template.jinja, else tokenizer_config.json's) and the generation prompt, as transformers does; the "
          "token ids (no special tokens added: the template writes them), or the text with tokenize=False.");
}

}  // namespace muninn::python
