// muninn.TokenStream: generate(..., stream=True). The model runs on a worker thread that never
// touches Python; it hands each token to a queue that __next__ waits on without the GIL, waking
// every 50 ms to let Ctrl-C through. The worker owns the model's busy flag until it ends.

#include <nanobind/stl/string.h>

#include <atomic>
#include <deque>
#include <exception>
#include <optional>
#include <thread>

#include "binding.hpp"

namespace muninn::python {
namespace {

// What the worker and the Python object share.
struct channel {
  std::mutex mu;
  std::condition_variable ready;
  std::deque<std::int32_t> tokens;
  bool done = false;
  std::exception_ptr error;
  fe::generation result;
  std::atomic<bool> cancel{false};
};

class token_stream {
 public:
  explicit token_stream(std::shared_ptr<fe::loaded_model> model) : ch_(std::make_shared<channel>()), model_(model) {}

  // Starts the worker, which clears the busy flag of `state` when it ends.
  void start(std::shared_ptr<model_state> state, std::vector<std::int32_t> prompt, fe::option_values o,
             std::vector<std::int32_t> stops) {
    worker_ = std::thread([ch = ch_, state = std::move(state), model = model_, prompt = std::move(prompt),
                           o = std::move(o), stops = std::move(stops)] {
      fe::generate_callbacks cb;
      cb.on_tokens = [&](const std::vector<std::int32_t>& t) {
        {
          std::lock_guard<std::mutex> lk(ch->mu);
          ch->tokens.insert(ch->tokens.end(), t.begin(), t.end());
        }
        ch->ready.notify_one();
      };
      cb.cancelled = [&] { return ch->cancel.load(); };
      fe::generation g;
      std::exception_ptr error;
      try {
        g = model->generate(prompt, o, stops, cb);
      } catch (...) {
        error = std::current_exception();
      }
      release(*state);  // before `done`: a caller who saw the end may use the model at once
      {
        std::lock_guard<std::mutex> lk(ch->mu);
        ch->result = std::move(g);
        ch->error = error;
        ch->done = true;
      }
      ch->ready.notify_all();
    });
  }

  ~token_stream() { stop(); }

  std::shared_ptr<channel> shared() const { return ch_; }

  std::int32_t next() {
    for (;;) {
      std::optional<std::int32_t> token;
      bool finished = false;
      {
        nb::gil_scoped_release release;
        std::unique_lock<std::mutex> lk(ch_->mu);
        ch_->ready.wait_for(lk, std::chrono::milliseconds(50), [&] { return !ch_->tokens.empty() || ch_->done; });
        if (!ch_->tokens.empty()) {
          token = ch_->tokens.front();
          ch_->tokens.pop_front();
        } else {
          finished = ch_->done;
        }
      }
      if (token) return *token;
      if (finished) {
        finish(true);
        throw nb::stop_iteration();
      }
      if (PyErr_CheckSignals() != 0) {  // Ctrl-C (main thread): stop the worker at its next token
        ch_->cancel = true;
        throw nb::python_error();
      }
    }
  }

  // Cancels the generation and waits for the worker (it never needs the GIL).
  void stop() {
    ch_->cancel = true;
    if (worker_.joinable()) worker_.join();
  }

  void close() {
    {
      nb::gil_scoped_release release;
      stop();
    }
    finish(false);
  }

  nb::object result() const { return result_ ? nb::cast(*result_) : nb::none(); }

 private:
  // After the worker ended: the Generation, or its error (raised once when `raise`).
  void finish(bool raise) {
    if (worker_.joinable()) {
      nb::gil_scoped_release release;
      worker_.join();
    }
    if (result_) return;
    std::exception_ptr error;
    std::swap(error, ch_->error);
    if (error && raise) std::rethrow_exception(error);
    result_ = generation_of(*model_, std::move(ch_->result));
  }

  std::shared_ptr<channel> ch_;
  std::shared_ptr<fe::loaded_model> model_;
  std::thread worker_;
  std::optional<py_generation> result_;
};

}  // namespace

nb::object start_stream(call_guard& guard, std::vector<std::int32_t> prompt, fe::option_values o,
                        std::vector<std::int32_t> stops) {
  auto stream = std::make_unique<token_stream>(guard.shared());
  // The busy flag passes to the worker before it starts (it clears the flag when it ends).
  std::weak_ptr<channel> ch = stream->shared();
  guard.hand_to_stream([ch] {
    if (auto c = ch.lock()) c->cancel = true;
  });
  try {
    stream->start(guard.state(), std::move(prompt), std::move(o), std::move(stops));
  } catch (...) {
    release(*guard.state());
    throw;
  }
  return nb::cast(stream.release(), nb::rv_policy::take_ownership);
}

void bind_stream(nb::module_& m) {
  nb::class_<token_stream>(m, "TokenStream",
                           "The tokens of one generation as they are produced (generate(..., stream=True)): iterate "
                           "it for token ids; .result is the Generation once it is exhausted. close() (or leaving a "
                           "`with` block) cancels the generation; until it ends, other calls on the model raise.")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &token_stream::next)
      .def("close", &token_stream::close, "Cancels the generation and waits for the worker thread.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](token_stream& s, nb::args) { s.close(); })
      .def_prop_ro("result", &token_stream::result,
                   "The Generation once the stream is exhausted or closed, else None.");
}

}  // namespace muninn::python
