// muninn.Error and its subclasses, and Ctrl-C between the steps of a call that runs without the GIL.

#include <Python.h>

#include "binding.hpp"
#include "muninn/core/error.hpp"

namespace muninn::python {
namespace {

PyObject* error_class = nullptr;       // muninn.Error: runtime errors, the base of the others
PyObject* usage_class = nullptr;       // muninn.UsageError, also a ValueError
PyObject* config_class = nullptr;      // muninn.ConfigError
PyObject* checkpoint_class = nullptr;  // muninn.CheckpointError
unsigned long main_thread_id = 0;

PyObject* new_class(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  PyObject* cls = PyErr_NewExceptionWithDoc((std::string("muninn.") + name).c_str(), doc, bases, nullptr);
  if (!cls) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;
}

PyObject* class_of(error_kind k) {
  switch (k) {
    case error_kind::usage: return usage_class;
    case error_kind::config: return config_class;
    case error_kind::checkpoint: return checkpoint_class;
    case error_kind::runtime: break;
  }
  return error_class;
}

}  // namespace

void bind_errors(nb::module_& m) {
  error_class = new_class(m, "Error", PyExc_Exception,
                          "Every error Muninn reports; raised as is for failures while running (allocation, "
                          "numerical limits, backend).");
  nb::object usage_bases = nb::make_tuple(nb::handle(error_class), nb::handle(PyExc_ValueError));
  usage_class = new_class(m, "UsageError", usage_bases.ptr(),
                          "An argument or option the caller gave: out of range, not applicable to this family, "
                          "a token id outside the vocabulary, a closed model.");
  config_class = new_class(m, "ConfigError", error_class,
                           "A config file (config.json, YAML, tokenizer.json, dataset.json) that cannot be used; "
                           "the message names the file and field.");
  checkpoint_class = new_class(m, "CheckpointError", error_class,
                               "A weight file: missing, truncated, wrong tensor names, shapes or dtypes; the message "
                               "names the file and tensor.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const error& e) {
      PyErr_SetString(class_of(e.kind()), e.what());
    }
  });
  main_thread_id = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
}

interrupt_check::interrupt_check()
    : main_thread_(PyThread_get_thread_ident() == main_thread_id), last_(std::chrono::steady_clock::now()) {}

bool interrupt_check::operator()() {
  if (hit_) return true;
  if (!main_thread_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(50)) return false;
  last_ = now;
  nb::gil_scoped_acquire gil;
  hit_ = PyErr_CheckSignals() != 0;
  return hit_;
}

void interrupt_check::throw_if_interrupted() {
  if ((*this)()) throw interrupted();
}

void interrupt_check::raise_if_interrupted() const {
  if (hit_) throw nb::python_error();
}

}  // namespace muninn::python
