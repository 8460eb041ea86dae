// muninn.load and muninn.Model: a loaded model of any family, its info, close() and the guard
// that keeps calls on one model from overlapping.

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>

#include <utility>

#include "binding.hpp"
#include "muninn/frontend/registry.hpp"

namespace muninn::python {
namespace {

// Python's dtype names and the option table's.
std::string table_dtype(const std::string& dtype) {
  if (dtype == "float32" || dtype == "fp32") return "fp32";
  if (dtype == "bfloat16" || dtype == "bf16") return "bf16";
  fail_as(error_kind::usage, "dtype must be float32 or bfloat16, got '", dtype, "'");
}

py_model load(const std::filesystem::path& path, const std::string& device, const std::string& dtype,
              const nb::kwargs& kwargs) {
  fe::option_values o = options_from(fe::operation::load, kwargs, "load", {"device", "dtype"});
  if (device != "cpu") o.set("device", device);  // the table's families: only Huginn and Llama take it
  if (table_dtype(dtype) != "fp32") o.set("dtype", table_dtype(dtype));
  const std::string p = path.string();
  std::shared_ptr<fe::loaded_model> m = without_gil([&] { return fe::open_model(p, o, "path"); });
  auto s = std::make_shared<model_state>();
  s->model = std::move(m);
  s->path = p;
  return py_model{std::move(s)};
}

nb::dict info_dict(const fe::model_info& i) {
  nb::dict d;
  d["family"] = i.family;
  d["display"] = i.display;
  d["path"] = i.path;
  d["vocab_size"] = i.vocab_size;
  d["context"] = i.context;
  d["parameters"] = i.parameters;
  nb::dict fields;
  for (const auto& f : i.fields) fields[f.label.c_str()] = f.value;
  d["fields"] = fields;
  return d;
}

// Never takes the GIL back while holding the state's mutex (another thread may hold the GIL and
// wait for the mutex): every wait on the mutex runs in a scope without the GIL.
void close(py_model& self) {
  model_state& s = *self.state;
  nb::gil_scoped_release release;
  std::shared_ptr<fe::loaded_model> doomed;
  {
    std::unique_lock<std::mutex> lk(s.mu);
    if (s.streaming && s.cancel_stream) s.cancel_stream();
    s.idle.wait(lk, [&] { return !s.busy; });
    doomed = std::move(s.model);
  }
  doomed.reset();  // frees the weights (unless a finished stream object still holds them)
}

bool is_closed(const py_model& self) {
  std::lock_guard<std::mutex> lk(self.state->mu);
  return !self.state->model;
}

std::string repr(const py_model& self) {
  if (is_closed(self)) return "<muninn.Model (closed) '" + self.state->path + "'>";
  const auto m = self.state->loaded();
  const fe::model_info& i = m->info();
  return "<muninn.Model " + i.family + " '" + i.path + "', vocab " + std::to_string(i.vocab_size) + ", " +
         std::to_string(i.parameters) + " parameters>";
}

}  // namespace

std::shared_ptr<const fe::loaded_model> model_state::loaded() const {
  std::shared_ptr<const fe::loaded_model> m;
  {
    std::lock_guard<std::mutex> lk(mu);  // a short section that never waits for the GIL
    m = model;
  }
  if (!m) fail_as(error_kind::usage, "the model '", path, "' is closed");
  return m;
}

call_guard::call_guard(std::shared_ptr<model_state> s, const char* method) : s_(std::move(s)) {
  nb::gil_scoped_release release;  // see close()
  std::unique_lock<std::mutex> lk(s_->mu);
  const auto check = [&] {
    if (!s_->model) fail_as(error_kind::usage, method, "(): the model '", s_->path, "' is closed");
    if (s_->streaming)
      fail_as(error_kind::usage, method, "(): a generation stream of this model is still running; exhaust or close() "
              "the stream first (calls on one model do not overlap)");
  };
  check();
  s_->idle.wait(lk, [&] { return !s_->busy; });
  check();
  s_->busy = true;
  model_ = s_->model;
}

call_guard::~call_guard() {
  if (owned_) release(*s_);
}

void call_guard::hand_to_stream(std::function<void()> cancel) {
  std::lock_guard<std::mutex> lk(s_->mu);
  s_->streaming = true;
  s_->cancel_stream = std::move(cancel);
  owned_ = false;
}

void release(model_state& s) {
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.busy = false;
    s.streaming = false;
    s.cancel_stream = nullptr;
  }
  s.idle.notify_all();
}

void bind_model(nb::module_& m) {
  nb::class_<py_model> cls(m, "Model",
                           "A checkpoint of any family, loaded with muninn.load(). Calls on one model run one at a "
                           "time (a call while another thread's runs waits for it); distinct models run in "
                           "parallel. The GIL is released while it computes.");
  m.def("load", &load, nb::arg("path"), nb::arg("device") = "cpu", nb::arg("dtype") = "float32", nb::arg("options"),
        keep("load(path, device='cpu', dtype='float32', **options) -> Model\n\n"
             "Loads the checkpoint folder `path` (a TRM / HRM run folder or step file too) of any family this build "
             "runs, recognised as the muninn CLI recognises it: Huginn, Llama, Mixture-of-Recursions, CALM (a model "
             "or an autoencoder on its own) and TRM / HRM.\n\n"
             "device: 'cpu', or 'cuda' (Huginn and Llama, in a module built with CUDA).\n"
             "dtype: 'float32', or 'bfloat16' (needs device='cuda').\n\n" +
             options_doc(fe::operation::load, {"device", "dtype"}) +
             "\nRaises UsageError (a path or option), ConfigError (config.json, YAML, tokenizer.json), "
             "CheckpointError (the weights)."));
  cls.def("info", [](const py_model& self) { return info_dict(self.state->loaded()->info()); },
          "What `muninn info` prints: family, path, vocab_size, context, parameters and every field by label.")
      .def_prop_ro("family", [](const py_model& self) { return self.state->loaded()->info().family; },
                   "The family: 'huginn', 'llama', 'mor', 'calm' or 'trm'.")
      .def_prop_ro("vocab_size", [](const py_model& self) { return self.state->loaded()->info().vocab_size; },
                   "Tokens in the vocabulary.")
      .def_prop_ro("context", [](const py_model& self) { return self.state->loaded()->info().context; },
                   "Positions the model takes (0: no limit that applies).")
      .def_prop_ro("eos_ids", [](const py_model& self) { return numpy_i32(self.state->loaded()->eos_ids()); },
                   "The ids that end a generation unless ignore_eos=True (generation_config.json / config.json).")
      .def_prop_ro("taps",
                   [](const py_model& self) {
                     nb::dict d;
                     for (const auto& t : self.state->loaded()->taps()) d[t.name.c_str()] = t.help;
                     return d;
                   },
                   "The taps forward(ids, taps=[...]) can return for this model, by name, with what each holds.")
      .def_prop_ro("closed", &is_closed, "Whether close() was called.")
      .def("close", &close,
           "Frees the model's memory now (a running stream is cancelled first); later calls raise UsageError.")
      .def("__enter__", [](py_model& self) -> py_model& { return self; }, nb::rv_policy::reference)
      .def("__exit__", [](py_model& self, nb::args) { close(self); })
      .def("__repr__", &repr);
  bind_forward(m, cls);
  bind_generate(m, cls);
  bind_extras(m, cls);
  bind_text(m, cls);
}

}  // namespace muninn::python
