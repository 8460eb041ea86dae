#pragma once
// The server's Prometheus series: counters, gauges and histograms updated by the scheduler and the
// request handlers, rendered in the text exposition format for GET /metrics.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace muninn::server {

/// \brief A cumulative histogram with fixed upper bounds (seconds or counts).
class histogram {
 public:
  explicit histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  /// \brief Appends the _bucket, _sum and _count lines of series `name`.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

/// \brief Every series of GET /metrics, behind one lock.
class metrics {
 public:
  metrics();
  /// \brief An HTTP request answered on `endpoint` with `status`.
  void request(const std::string& endpoint, int status);
  /// \brief A generation ended ("length", "stop", "cancelled", "timeout", "error", "shutdown").
  void finished(const std::string& reason, std::int64_t prompt_tokens, std::int64_t generated_tokens,
                double seconds);
  /// \brief Time from arrival to the first token.
  void first_token(double seconds);
  /// \brief Time between two tokens of one request.
  void inter_token(double seconds);
  /// \brief Tokens that ran `depth` recurrence steps (or recursions) each.
  void token_depth(std::int64_t depth, std::int64_t tokens);
  /// \brief One scheduler step: requests advanced, token rows computed, of which prompt tokens.
  void step(std::int64_t requests, std::int64_t rows, std::int64_t prefill_rows);
  /// \brief The queue and the running batch now.
  void occupancy(std::int64_t queued, std::int64_t running, std::int64_t max_batch);
  /// \brief The text exposition format.
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> finished_;
  std::uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, steps_ = 0, step_rows_ = 0, prefill_rows_ = 0;
  std::uint64_t depth_sum_ = 0, depth_tokens_ = 0;
  std::int64_t queued_ = 0, running_ = 0, max_batch_ = 0;
  histogram ttft_, itl_, duration_, batch_rows_;
};

}  // namespace muninn::server
