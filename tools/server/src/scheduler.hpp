#pragma once
// The scheduler: one thread owns the model's batch engine. Requests wait in a bounded queue and
// join the running batch between steps while it has room; every step advances all running
// requests by one token boundary; finished, cancelled and timed-out requests leave between steps
// and free their rows and KV caches at once. Handlers talk to it through a `job`.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "metrics.hpp"
#include "muninn/frontend/batch.hpp"
#include "muninn/frontend/model.hpp"
#include "muninn/server/server.hpp"

namespace muninn::server {

using clock_type = std::chrono::steady_clock;

/// \brief One request between a handler and the scheduler.
struct job {
  // Set by the handler before submitting, then read-only.
  std::vector<std::int32_t> prompt;
  frontend::option_values options{frontend::operation::generate, "", '_'};
  std::vector<std::int32_t> stop_ids;
  clock_type::time_point arrived, deadline;

  enum class phase { queued, running, finished };
  // Guarded by `mu`; `cv` is notified on every change.
  std::mutex mu;
  std::condition_variable cv;
  phase state = phase::queued;
  std::vector<std::int32_t> tokens;  ///< every token produced so far
  std::vector<std::int32_t> steps;   ///< the depth of each
  std::string finish_reason;         ///< "length", "stop", "cancelled", "timeout", "shutdown", "error"
  std::string error;                 ///< the message when finish_reason is "error"
  bool usage_error = false;          ///< the error was the request's (HTTP 400)

  /// \brief Asks the scheduler to end the request ("stop": a stop string matched; "cancelled":
  /// the client went away); it leaves at the next step boundary.
  void cancel(const std::string& reason);
  std::string cancel_reason() const;

 private:
  friend class scheduler;
  mutable std::mutex cancel_mu_;
  std::string cancel_;
  std::int64_t engine_id_ = 0;
  clock_type::time_point last_token_;
};

class scheduler {
 public:
  scheduler(const frontend::loaded_model& m, const settings& s, metrics& met);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  /// \brief Validates a request against the model and the context (usage errors); any thread.
  void check(const std::vector<std::int32_t>& prompt, const frontend::option_values& o) const;

  enum class admission { accepted, queue_full, draining };
  /// \brief Queues `j`; refused when the queue is full or the server is draining.
  admission submit(const std::shared_ptr<job>& j);
  /// \brief Wakes the scheduler (a job was cancelled).
  void wake();
  /// \brief Seconds a refused client should wait: the mean request duration so far, at least 1.
  int retry_after() const;
  /// \brief Stops taking requests; waits up to `grace_s` for the queued and running ones, then
  /// cancels the rest ("shutdown") and stops the thread.
  void drain(double grace_s);
  /// \brief Requests queued and running.
  std::int64_t load() const;

 private:
  void loop();
  void admit();
  void retire_cancelled(clock_type::time_point now);
  void deliver(const std::vector<frontend::batch_output>& outs);
  void finish(const std::shared_ptr<job>& j, const std::string& reason, const std::string& error = "",
              bool usage_error = false);
  void publish();

  const frontend::loaded_model& m_;
  settings s_;
  metrics& met_;
  std::unique_ptr<frontend::batch_engine> engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<job>> queue_;
  std::map<std::int64_t, std::shared_ptr<job>> running_;  // by engine id
  bool draining_ = false, stop_ = false;
  double mean_duration_ = 1.0;
  std::thread thread_;
};

}  // namespace muninn::server
