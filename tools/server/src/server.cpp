// The HTTP side of `muninn serve`: routes, authentication, request handlers that wait on their
// job (streaming or not), and the drain on SIGTERM.

#include "muninn/server/server.hpp"

#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <ostream>
#include <thread>

#include "connection.hpp"
#include "metrics.hpp"
#include "muninn/core/error.hpp"
#include "muninn/io/json_writer.hpp"
#include "openai_request.hpp"
#include "responses.hpp"
#include "scheduler.hpp"
#include "text_stream.hpp"

namespace muninn::server {

namespace fe = muninn::frontend;

settings settings::from(const fe::option_values& o, const fe::loaded_model& m) {
  settings s;
  s.host = o.text("host");
  s.port = int(o.integer("port"));
  s.max_batch = o.integer("max-batch");
  s.max_queue = o.integer("max-queue");
  s.api_key = o.text("api-key", "");
  if (!o.has("api-key"))
    if (const char* k = std::getenv("MUNINN_API_KEY")) s.api_key = k;
  s.context = o.integer("ctx", 0);
  if (m.info().context > 0 && s.context > m.info().context)
    o.reject("ctx", "must be at most the model's context of " + std::to_string(m.info().context) + ", got " +
                        std::to_string(s.context));
  s.prefill_chunk = o.integer("prefill-chunk");
  s.timeout_s = o.number("timeout");
  s.max_body = o.integer("max-body");
  s.grace_s = o.number("grace");
  s.continuous = o.choice("batching") == "continuous";
  std::string name = m.info().path;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  s.model_name = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
  return s;
}

namespace {

using io::json;

std::int64_t unix_now() { return std::int64_t(std::time(nullptr)); }

// Equal keys in time that depends only on the expected key's length.
bool same_key(const std::string& given, const std::string& expected) {
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : ~expected[i]));
  return diff == 0;
}

std::string new_id(const char* prefix) {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t boot = std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%012llx%06llx", prefix, static_cast<unsigned long long>(boot & 0xffffffffffffULL),
                static_cast<unsigned long long>(++counter & 0xffffffULL));
  return buf;
}

const char* json_type = "application/json; charset=utf-8";  // exactly this: httplib does not compress it

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(io::to_json_text(body) + "\n", json_type);
}

void reply_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                 const std::string& code = "") {
  reply(res, status, error_json(message, type, code));
}

std::string sse(const json& v) { return "data: " + io::to_json_text(v) + "\n\n"; }

// How a finished job reads to a client that is still there.
struct outcome {
  int status = 200;          // for a response that is not streamed yet
  std::string finish;        // "stop" or "length" when it succeeded
  std::string message, type;  // otherwise
};

outcome outcome_of(const job& j, bool stopped_by_text) {
  outcome o;
  if (stopped_by_text || j.finish_reason == "stop") {
    o.finish = "stop";
  } else if (j.finish_reason == "length") {
    o.finish = "length";
  } else if (j.finish_reason == "timeout") {
    o = {504, "", "the request took longer than the server's --timeout", "timeout_error"};
  } else if (j.finish_reason == "shutdown") {
    o = {503, "", "the server is shutting down", "server_error"};
  } else if (j.usage_error) {
    o = {400, "", with_field_names(j.error), "invalid_request_error"};
  } else {
    o = {500, "", j.error.empty() ? "the request ended: " + j.finish_reason : j.error, "server_error"};
  }
  return o;
}

class server_impl {
 public:
  server_impl(const fe::loaded_model& m, const settings& s, std::ostream& log)
      : m_(m), s_(s), log_(log), sched_(m, s, met_) {
    if (m.info().family == "huginn") depth_field_ = "recurrence_steps";
    else if (m.info().family == "mor") depth_field_ = "recursions";
    else if (m.info().family == "calm") depth_field_ = "head_samples";
  }

  int run();

 private:
  void routes();
  bool authorized(const httplib::Request& req, httplib::Response& res) const;
  void generate(endpoint kind, const httplib::Request& req, httplib::Response& res);
  void whole(const std::shared_ptr<job>& j, const std::shared_ptr<parsed_request>& r, connection_probe& probe,
             httplib::Response& res);
  void stream(const std::shared_ptr<job>& j, const std::shared_ptr<parsed_request>& r,
              std::shared_ptr<connection_probe> probe, std::shared_ptr<void> active, httplib::Response& res);
  std::int64_t depth_total(const job& j) const {
    std::int64_t d = 0;
    for (auto s : j.steps) d += s;
    return d;
  }

  const fe::loaded_model& m_;
  settings s_;
  std::ostream& log_;
  metrics met_;
  scheduler sched_;
  httplib::Server svr_;
  std::string depth_field_;
  std::atomic<int> active_{0};
};

bool server_impl::authorized(const httplib::Request& req, httplib::Response& res) const {
  if (s_.api_key.empty()) return true;
  const std::string h = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  const bool ok = h.size() > bearer.size() && h.compare(0, bearer.size(), bearer) == 0 &&
                  same_key(h.substr(bearer.size()), s_.api_key);
  if (!ok) {
    res.set_header("WWW-Authenticate", "Bearer");
    reply_error(res, 401, "a valid API key is required: send the header Authorization: Bearer KEY",
                "authentication_error", "invalid_api_key");
  }
  return ok;
}

// Waits on `j` until `done(j)`, asking after the client at every wake-up (the probe peeks at most
// every 50 ms, a recv with MSG_PEEK: cheap, and a short job must not finish before its client's
// departure is seen): a client that went away cancels the job, even while tokens keep coming for
// a response that is not streamed. Returns false when it did.
template <class Done>
bool wait_for(job& j, scheduler& sched, connection_probe& probe, Done&& done) {
  std::unique_lock<std::mutex> l(j.mu);
  for (;;) {
    const bool ready = j.cv.wait_for(l, std::chrono::milliseconds(50), [&] { return done(j); });
    l.unlock();
    const bool alive = probe.alive();
    l.lock();
    if (!alive) {
      j.cancel("cancelled");
      sched.wake();
      return false;
    }
    if (ready) return true;
  }
}

void server_impl::generate(endpoint kind, const httplib::Request& req, httplib::Response& res) {
  const std::string ep = kind == endpoint::chat ? "/v1/chat/completions" : "/v1/completions";
  // Counts the request as active until its response is written (a stream outlives this handler).
  ++active_;
  const std::shared_ptr<void> active(nullptr, [this](void*) { --active_; });
  if (!authorized(req, res)) return met_.request(ep, res.status);
  auto r = std::make_shared<parsed_request>();
  try {
    *r = parse_request(kind, req.body, m_, s_);
    sched_.check(r->prompt, r->options);
  } catch (const error& e) {
    const bool usage = e.kind() == error_kind::usage;
    reply_error(res, usage ? 400 : 500, with_field_names(e.what()), usage ? "invalid_request_error" : "server_error");
    return met_.request(ep, res.status);
  }
  auto j = std::make_shared<job>();
  j->prompt = r->prompt;
  j->options = r->options;
  j->stop_ids = r->stop_ids;
  j->arrived = clock_type::now();
  j->deadline = j->arrived + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s_.timeout_s));
  switch (sched_.submit(j)) {
    case scheduler::admission::queue_full:
      res.set_header("Retry-After", std::to_string(sched_.retry_after()));
      reply_error(res, 429, "the server is busy: every place in the batch and the queue (--max-queue " +
                                std::to_string(s_.max_queue) + ") is taken; retry later",
                  "rate_limit_error", "queue_full");
      return met_.request(ep, 429);
    case scheduler::admission::draining:
      res.set_header("Connection", "close");
      reply_error(res, 503, "the server is shutting down", "server_error");
      return met_.request(ep, 503);
    case scheduler::admission::accepted: break;
  }
  auto probe = std::make_shared<connection_probe>(req.remote_addr, req.remote_port, req.local_port);
  // Until the job has a place in the batch (or failed to get one), nothing is sent: an error there
  // still gets its own status code.
  if (!wait_for(*j, sched_, *probe, [](const job& x) { return x.state != job::phase::queued; })) return;
  {
    std::lock_guard<std::mutex> l(j->mu);
    if (j->state == job::phase::finished && j->tokens.empty()) {
      const outcome o = outcome_of(*j, false);
      if (o.finish.empty()) {
        reply_error(res, o.status, o.message, o.type);
        return met_.request(ep, o.status);
      }
    }
  }
  met_.request(ep, 200);
  if (r->stream)
    stream(j, r, probe, active, res);
  else
    whole(j, r, *probe, res);
}

void server_impl::whole(const std::shared_ptr<job>& j, const std::shared_ptr<parsed_request>& r,
                        connection_probe& probe, httplib::Response& res) {
  text_stream ts(m_, r->stop);
  std::size_t seen = 0;
  for (;;) {
    // Tokens are turned into text as they come, so that a stop string ends the job at once.
    if (!wait_for(*j, sched_, probe, [&](const job& x) { return x.tokens.size() > seen || x.state == job::phase::finished; }))
      return;
    std::vector<std::int32_t> fresh;
    bool finished = false;
    {
      std::lock_guard<std::mutex> l(j->mu);
      fresh.assign(j->tokens.begin() + std::ptrdiff_t(seen), j->tokens.end());
      finished = j->state == job::phase::finished;
    }
    for (auto t : fresh) {
      ++seen;
      ts.add(t);
      if (ts.stopped()) break;
    }
    if (ts.stopped() && !finished) {
      j->cancel("stop");
      sched_.wake();
      (void)wait_for(*j, sched_, probe, [](const job& x) { return x.state == job::phase::finished; });
      finished = true;
    }
    if (finished) break;
  }
  ts.finish();
  std::lock_guard<std::mutex> l(j->mu);
  const outcome o = outcome_of(*j, ts.stopped());
  if (o.finish.empty()) return reply_error(res, o.status, o.message, o.type);
  response_meta meta{new_id(r->kind == endpoint::chat ? "chatcmpl" : "cmpl"), unix_now(), s_.model_name};
  const std::int64_t n = ts.stopped() ? std::int64_t(seen) : std::int64_t(j->tokens.size());
  reply(res, 200, response_json(*r, meta, ts.text(), o.finish, usage_json(*r, n, depth_field_, depth_total(*j))));
}

// One server-sent event per token (its text may be empty while a character or a possible stop
// string is incomplete), then the finish reason with any text held back, the usage when asked
// for, and [DONE].
void server_impl::stream(const std::shared_ptr<job>& j, const std::shared_ptr<parsed_request>& r,
                         std::shared_ptr<connection_probe> probe, std::shared_ptr<void> active,
                         httplib::Response& res) {
  struct state {
    text_stream ts;
    std::size_t seen = 0;
    bool first = true, ended = false;
    response_meta meta;
  };
  auto st = std::make_shared<state>(state{text_stream(m_, r->stop), 0, true, false,
                                          {new_id(r->kind == endpoint::chat ? "chatcmpl" : "cmpl"), unix_now(),
                                           s_.model_name}});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",  // exactly this: httplib compresses other text/ types, which would hold events back
      [this, j, r, probe, st](std::size_t, httplib::DataSink& sink) {
        if (!wait_for(*j, sched_, *probe, [&](const job& x) {
              return x.tokens.size() > st->seen || x.state == job::phase::finished;
            }))
          return false;
        std::vector<std::int32_t> fresh;
        bool finished = false;
        {
          std::lock_guard<std::mutex> l(j->mu);
          fresh.assign(j->tokens.begin() + std::ptrdiff_t(st->seen), j->tokens.end());
          finished = j->state == job::phase::finished;
        }
        std::string out;
        for (auto t : fresh) {
          if (st->ts.stopped()) break;
          ++st->seen;
          out += sse(chunk_json(*r, st->meta, st->ts.add(t), st->first, ""));
          st->first = false;
        }
        if (st->ts.stopped() && !finished) {
          j->cancel("stop");
          sched_.wake();
          (void)wait_for(*j, sched_, *probe, [](const job& x) { return x.state == job::phase::finished; });
          finished = true;
        }
        if (finished) {
          const std::string tail = st->ts.finish();
          std::lock_guard<std::mutex> l(j->mu);
          const outcome o = outcome_of(*j, st->ts.stopped());
          if (o.finish.empty()) {
            out += sse(error_json(o.message, o.type));
          } else {
            // Text held back to the end (an incomplete character) rides on the finish chunk, so that
            // the stream holds exactly one chunk per token before it.
            out += sse(chunk_json(*r, st->meta, tail, st->first, o.finish));
            if (r->include_usage) {
              const std::int64_t n = st->ts.stopped() ? std::int64_t(st->seen) : std::int64_t(j->tokens.size());
              out += sse(usage_chunk_json(*r, st->meta, usage_json(*r, n, depth_field_, depth_total(*j))));
            }
          }
          out += "data: [DONE]\n\n";
          st->ended = true;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (st->ended) sink.done();
        return true;
      },
      [this, j, active](bool success) {
        if (!success) {  // the client went away mid-stream
          j->cancel("cancelled");
          sched_.wake();
        }
      });
}

void server_impl::routes() {
  svr_.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& s) {
    generate(endpoint::completions, q, s);
  });
  svr_.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& s) {
    generate(endpoint::chat, q, s);
  });
  svr_.Get("/v1/models", [this](const httplib::Request& q, httplib::Response& s) {
    if (authorized(q, s)) reply(s, 200, models_json(s_.model_name, unix_now()));
    met_.request("/v1/models", s.status);
  });
  svr_.Get("/health", [this](const httplib::Request&, httplib::Response& s) {
    reply(s, 200, io::json_object_builder().add("status", "ok").build());
    met_.request("/health", 200);
  });
  svr_.Get("/metrics", [this](const httplib::Request& q, httplib::Response& s) {
    if (authorized(q, s)) s.set_content(met_.render(), "text/plain; version=0.0.4; charset=utf-8");
    met_.request("/metrics", s.status);
  });
  svr_.set_error_handler([](const httplib::Request& q, httplib::Response& s) {
    if (!s.body.empty()) return;
    if (s.status == 413)
      reply_error(s, 413, "the request body is larger than the server's --max-body", "invalid_request_error");
    else if (s.status == 404)
      reply_error(s, 404, "no route " + q.method + " " + q.path, "invalid_request_error", "not_found");
    else
      reply_error(s, s.status, "HTTP " + std::to_string(s.status), "invalid_request_error");
  });
  svr_.set_exception_handler([](const httplib::Request&, httplib::Response& s, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(s, 500, what, "server_error");
  });
}

int server_impl::run() {
  routes();
  const std::size_t threads = std::size_t(std::min<std::int64_t>(s_.max_batch + s_.max_queue + 8, 4096));
  svr_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr_.set_payload_max_length(std::size_t(s_.max_body));
  svr_.set_read_timeout(10, 0);
  svr_.set_write_timeout(10, 0);
  svr_.set_keep_alive_max_count(1000);
  int port = s_.port;
  if (port == 0) {
    port = svr_.bind_to_any_port(s_.host);
    if (port < 0) fail_as(error_kind::usage, "--host ", s_.host, ": cannot listen there");
  } else if (!svr_.bind_to_port(s_.host, port)) {
    fail_as(error_kind::usage, "cannot listen on ", s_.host, ":", port,
            " (the port is taken, or the address is not one of this machine's)");
  }
  log_ << "muninn serve: listening on http://" << s_.host << ":" << port << " (model " << s_.model_name << ", "
       << m_.info().display << ", " << (s_.continuous ? "continuous" : "sequence-wise") << " batching of up to "
       << s_.max_batch << " requests)" << std::endl;

  // SIGTERM / SIGINT are taken by this thread alone (they are blocked everywhere before any thread starts).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  std::thread listener([this] { svr_.listen_after_bind(); });
  int sig = 0;
  sigwait(&set, &sig);
  log_ << "muninn serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining " << sched_.load()
       << " requests (grace " << s_.grace_s << " s)" << std::endl;
  sched_.drain(s_.grace_s);
  // Handlers still writing their last events get a moment; then the listener stops.
  const auto until = clock_type::now() + std::chrono::seconds(5);
  while (active_.load() > 0 && clock_type::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  svr_.stop();
  listener.join();
  log_ << "muninn serve: stopped" << std::endl;
  return 0;
}

}  // namespace

void take_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int serve(const fe::loaded_model& m, const settings& s, std::ostream& log) {
  take_signals();  // in case the caller did not: threads started from here on inherit the mask
  server_impl impl(m, s, log);
  return impl.run();
}

}  // namespace muninn::server
