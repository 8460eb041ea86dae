#pragma once
// What the translation units of the muninn Python module share: the model handle (one loaded
// model, its busy flag and close()), Python values to token ids and options, numpy arrays that
// own the C++ results, and the exceptions. Each binding_*.cpp registers one group of functions.

#include <nanobind/nanobind.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "muninn/frontend/model.hpp"
#include "muninn/frontend/options.hpp"

namespace muninn::python {
namespace nb = nanobind;
namespace fe = muninn::frontend;

// ---- errors.cpp

/// \brief Creates muninn.Error and its subclasses and translates muninn::error by kind.
void bind_errors(nb::module_& m);

/// \brief Thrown out of a callback of a call that runs without the GIL when Ctrl-C arrived; the
/// binding turns it back into the pending KeyboardInterrupt (see without_gil).
struct interrupted : std::exception {};

/// \brief Ctrl-C between tokens, blocks or batches of a call that runs without the GIL. Python
/// runs signal handlers on the main thread only, so other threads never take the GIL here; the
/// main thread takes it at most every 50 ms.
class interrupt_check {
 public:
  interrupt_check();  // with the GIL: notes whether this is the main thread
  /// \brief Without the GIL: true once a signal handler raised (the exception is pending).
  bool operator()();
  /// \brief Without the GIL: throws `interrupted` when operator() is true.
  void throw_if_interrupted();
  /// \brief With the GIL: raises the pending KeyboardInterrupt when one arrived.
  void raise_if_interrupted() const;

 private:
  bool main_thread_ = false;
  bool hit_ = false;
  std::chrono::steady_clock::time_point last_;
};

/// \brief Runs `f` without the GIL; an `interrupted` escaping it becomes the pending Python error.
template <class F>
decltype(auto) without_gil(F&& f) {
  try {
    nb::gil_scoped_release release;
    return f();
  } catch (const interrupted&) {
    throw nb::python_error();
  }
}

// ---- model.cpp

/// \brief A loaded model shared by its Python handle, its tokenizer and a running stream: calls
/// on it never overlap (a call while another runs waits for it; a call while a stream is open raises)
/// and close() frees it once the running call is done.
struct model_state {
  std::shared_ptr<fe::loaded_model> model;  ///< null once closed
  mutable std::mutex mu;
  std::condition_variable idle;
  bool busy = false;       ///< a call or a stream runs
  bool streaming = false;  ///< ... and it is a stream
  std::function<void()> cancel_stream;  ///< stops the running stream (set while one runs)
  std::string path;        ///< for messages after close()

  /// \brief The model for what does not change after loading (info, tokenizer), whether a call
  /// runs or not; a usage error when closed.
  std::shared_ptr<const fe::loaded_model> loaded() const;
};

/// \brief Holds a model_state busy for one call (constructed with the GIL held, waits for a
/// running call of another thread without it).
class call_guard {
 public:
  call_guard(std::shared_ptr<model_state> s, const char* method);
  ~call_guard();
  call_guard(const call_guard&) = delete;
  call_guard& operator=(const call_guard&) = delete;
  fe::loaded_model& model() const { return *model_; }
  const std::shared_ptr<fe::loaded_model>& shared() const { return model_; }
  const std::shared_ptr<model_state>& state() const { return s_; }
  /// \brief Hands the busy flag to a stream's worker thread, which clears it when it ends.
  void hand_to_stream(std::function<void()> cancel);

 private:
  std::shared_ptr<model_state> s_;
  std::shared_ptr<fe::loaded_model> model_;
  bool owned_ = true;
};

/// \brief Clears the busy flag of `s` (the end of a call or of a stream) and wakes a waiter.
void release(model_state& s);

/// \brief The Python object `muninn.Model`.
struct py_model {
  std::shared_ptr<model_state> state;
};

void bind_model(nb::module_& m);

// ---- convert.cpp

/// \brief Token ids of one sequence: a list or tuple of ints, or a 1-D integer array of any
/// layout (numpy, or any object with __dlpack__). TypeError for other types and float or bool
/// values; a usage error for ids that do not fit in 32 bits. `what` names the argument.
std::vector<std::int32_t> ids_from(nb::handle obj, const std::string& what);

/// \brief Whether `obj` holds several sequences: a 2-D array, or a list or tuple whose first
/// item is itself a sequence (list, tuple, array or str). A 3-D or deeper array is a usage error.
bool is_batch(nb::handle obj, const std::string& what);

/// \brief The rows of a 2-D integer array, or the sequences of a list of sequences.
std::vector<std::vector<std::int32_t>> batch_from(nb::handle obj, const std::string& what);

/// \brief Whether `obj` is an array (numpy, or anything with __dlpack__ or __array_interface__).
bool is_array(nb::handle obj);

/// \brief A numpy array that owns `values` (moved, not copied) with `shape` (empty: 1-D).
nb::object numpy_f32(std::vector<float>&& values, std::vector<std::size_t> shape = {});
nb::object numpy_i32(std::vector<std::int32_t>&& values, std::vector<std::size_t> shape = {});
nb::object numpy_i64(std::vector<std::int64_t>&& values, std::vector<std::size_t> shape = {});

/// \brief The keyword arguments of a method as options of `op`: names of call_options(op)
/// spelled with underscores, minus `positional` (the method's own arguments). An unknown name is
/// a TypeError naming it ("generate() got an unexpected keyword argument 'x'"), as is a value of
/// the wrong Python type; None leaves an option unset. Values are checked against the table
/// (usage errors), required options are TypeErrors when missing.
fe::option_values options_from(fe::operation op, const nb::kwargs& kwargs, const char* method,
                               std::initializer_list<const char*> positional = {});

/// \brief The "Keyword arguments" section of a method's docstring, from the option table of `op`.
std::string options_doc(fe::operation op, std::initializer_list<const char*> positional = {});

/// \brief A Python str of UTF-8 text (invalid bytes, such as half a character, become U+FFFD).
nb::object text_of(const std::string& utf8);

/// \brief A string that lives as long as the module (nanobind keeps docstring pointers).
const char* keep(std::string s);

// ---- generate.cpp, stream.cpp

/// \brief The Python object `muninn.Generation`: what one generation produced.
struct py_generation {
  nb::object ids;          ///< int32 [new tokens]
  nb::object text;         ///< str, or None without a tokenizer
  std::string stop_reason;
  nb::object steps;        ///< int32: recurrence steps per token (Huginn) or head samples per chunk (CALM)
  nb::object depths;       ///< int32: recursions per position (Mixture-of-Recursions)
  std::vector<std::string> notes;
};
py_generation generation_of(const fe::loaded_model& m, fe::generation&& g);

/// \brief A token stream (generate(..., stream=True)) over `prompt`: the worker thread takes over
/// the busy flag of `guard`.
nb::object start_stream(call_guard& guard, std::vector<std::int32_t> prompt, fe::option_values o,
                        std::vector<std::int32_t> stops);
void bind_stream(nb::module_& m);

// ---- the other groups

void bind_forward(nb::module_& m, nb::class_<py_model>& cls);
void bind_generate(nb::module_& m, nb::class_<py_model>& cls);
void bind_extras(nb::module_& m, nb::class_<py_model>& cls);
void bind_text(nb::module_& m, nb::class_<py_model>& cls);

}  // namespace muninn::python
