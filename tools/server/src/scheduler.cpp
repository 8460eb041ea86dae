// The scheduler thread: admission from the bounded queue, one engine step per loop, delivery of
// new tokens to the jobs, and the exits (finished, cancelled, timed out, shut down) in between.

#include "scheduler.hpp"

#include <algorithm>
#include <exception>

#include "muninn/core/error.hpp"

namespace muninn::server {

void job::cancel(const std::string& reason) {
  std::lock_guard<std::mutex> l(cancel_mu_);
  if (cancel_.empty()) cancel_ = reason;
}

std::string job::cancel_reason() const {
  std::lock_guard<std::mutex> l(cancel_mu_);
  return cancel_;
}

scheduler::scheduler(const frontend::loaded_model& m, const settings& s, metrics& met) : m_(m), s_(s), met_(met) {
  frontend::batch_limits lim;
  lim.max_requests = s.max_batch;
  lim.prefill_tokens = s.prefill_chunk;
  lim.context = s.context;
  lim.by_depth = s.continuous;
  engine_ = m.batch(lim);
  publish();
  thread_ = std::thread([this] { loop(); });
}

scheduler::~scheduler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    for (auto& j : queue_) j->cancel("shutdown");
    for (auto& [id, j] : running_) j->cancel("shutdown");
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void scheduler::check(const std::vector<std::int32_t>& prompt, const frontend::option_values& o) const {
  engine_->check(prompt, o);
}

scheduler::admission scheduler::submit(const std::shared_ptr<job>& j) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_ || stop_) return admission::draining;
    const std::int64_t free_places = std::max<std::int64_t>(0, s_.max_batch - std::int64_t(running_.size()));
    if (std::int64_t(queue_.size()) >= s_.max_queue + free_places) return admission::queue_full;
    queue_.push_back(j);
    publish();
  }
  cv_.notify_all();
  return admission::accepted;
}

void scheduler::wake() { cv_.notify_all(); }

int scheduler::retry_after() const {
  std::lock_guard<std::mutex> l(mu_);
  return std::max(1, int(mean_duration_ + 0.5));
}

std::int64_t scheduler::load() const {
  std::lock_guard<std::mutex> l(mu_);
  return std::int64_t(queue_.size() + running_.size());
}

void scheduler::drain(double grace_s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    draining_ = true;
  }
  const auto until = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                             std::chrono::duration<double>(grace_s));
  while (clock_type::now() < until && load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& j : queue_) j->cancel("shutdown");
    for (auto& [id, j] : running_) j->cancel("shutdown");
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void scheduler::loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    retire_cancelled(clock_type::now());
    admit();
    publish();
    if (stop_ && running_.empty() && queue_.empty()) return;
    if (running_.empty()) {
      cv_.wait_for(l, std::chrono::milliseconds(100));
      continue;
    }
    l.unlock();
    std::vector<frontend::batch_output> outs;
    std::string failure;
    try {
      outs = engine_->step();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    l.lock();
    if (!failure.empty()) {  // the batch's state is unknown: every running request ends with the error
      for (auto& [id, j] : running_) {
        engine_->remove(id);
        finish(j, "error", failure);
      }
      running_.clear();
      continue;
    }
    const frontend::batch_step_stats& st = engine_->last_step();
    met_.step(st.requests, st.rows, st.prefill_tokens);
    deliver(outs);
  }
}

// Queued jobs take the free places (in sequence-wise mode only when the batch is empty: a batch
// runs until its last request ends).
void scheduler::admit() {
  if (!s_.continuous && !running_.empty()) return;
  while (!queue_.empty() && std::int64_t(running_.size()) < s_.max_batch) {
    std::shared_ptr<job> j = queue_.front();
    queue_.pop_front();
    try {
      const std::int64_t id = engine_->add(j->prompt, j->options, j->stop_ids);
      j->engine_id_ = id;
      j->last_token_ = clock_type::now();
      running_[id] = j;
      std::lock_guard<std::mutex> jl(j->mu);
      j->state = job::phase::running;
      j->cv.notify_all();
    } catch (const error& e) {
      finish(j, "error", e.what(), e.kind() == error_kind::usage);
    } catch (const std::exception& e) {
      finish(j, "error", e.what());
    }
  }
}

void scheduler::retire_cancelled(clock_type::time_point now) {
  const auto reason_of = [&](const job& j) {
    std::string r = j.cancel_reason();
    if (r.empty() && now >= j.deadline) r = "timeout";
    return r;
  };
  for (auto it = queue_.begin(); it != queue_.end();) {
    const std::string r = reason_of(**it);
    if (r.empty()) {
      ++it;
      continue;
    }
    finish(*it, r);
    it = queue_.erase(it);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    const std::string r = reason_of(*it->second);
    if (r.empty()) {
      ++it;
      continue;
    }
    engine_->remove(it->first);  // its row and KV cache go now
    finish(it->second, r);
    it = running_.erase(it);
  }
}

void scheduler::deliver(const std::vector<frontend::batch_output>& outs) {
  const auto now = clock_type::now();
  for (const auto& o : outs) {
    const auto it = running_.find(o.id);
    if (it == running_.end()) continue;
    const std::shared_ptr<job> j = it->second;
    if (!o.tokens.empty()) {
      bool first = false;
      {
        std::lock_guard<std::mutex> jl(j->mu);
        first = j->tokens.empty();
        j->tokens.insert(j->tokens.end(), o.tokens.begin(), o.tokens.end());
        j->steps.insert(j->steps.end(), o.steps.begin(), o.steps.end());
        j->cv.notify_all();
      }
      const double since = std::chrono::duration<double>(now - (first ? j->arrived : j->last_token_)).count();
      first ? met_.first_token(since) : met_.inter_token(since);
      j->last_token_ = now;
      for (auto s : o.steps) met_.token_depth(s, 1);
    }
    if (o.finished) {
      finish(j, o.stop_reason);
      running_.erase(it);
    }
  }
}

// The metrics first: a handler woken by the job may answer, and its client read /metrics, at once.
void scheduler::finish(const std::shared_ptr<job>& j, const std::string& reason, const std::string& err,
                       bool usage_error) {
  std::lock_guard<std::mutex> jl(j->mu);
  const double seconds = std::chrono::duration<double>(clock_type::now() - j->arrived).count();
  if (reason == "length" || reason == "stop") mean_duration_ = 0.9 * mean_duration_ + 0.1 * seconds;
  met_.finished(reason, std::int64_t(j->prompt.size()), std::int64_t(j->tokens.size()), seconds);
  j->state = job::phase::finished;
  j->finish_reason = reason;
  j->error = err;
  j->usage_error = usage_error;
  j->cv.notify_all();
}

void scheduler::publish() {
  met_.occupancy(std::int64_t(queue_.size()), std::int64_t(running_.size()), s_.max_batch);
}

}  // namespace muninn::server
