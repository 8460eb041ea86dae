#pragma once
// The request bookkeeping shared by the batch engines whose decoding tokens live in a runtime
// scheduler by sequence slot (Huginn's exit pools, Mixture-of-Recursions' depth-wise batcher).
// Requests such a scheduler cannot take run in a forward_batch engine beside it (rows_batch) under
// ids of this engine; the others hold the lowest free slot, whose context the scheduler reads
// through ctx_of_, until they finish or are removed. The engines differ only in how they schedule
// tokens and in how a removed request's token leaves their scheduler (drop()).

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "lm_batch.hpp"

namespace muninn::frontend::detail {

/// \brief Base of a slot-scheduled batch engine. Request has `id`, `slot`, `ctx` and `done`.
template <class Model, class Request>
class slot_batch : public batch_engine {
 public:
  void check(const std::vector<std::int32_t>& prompt, const option_values& o) const override {
    rows_.check(prompt, o);
  }

  void remove(std::int64_t id) final {
    for (const auto& [inner, outer] : inner_)
      if (outer == id) {
        rows_.remove(inner);
        erase_inner(id);
        return;
      }
    for (auto it = reqs_.begin(); it != reqs_.end(); ++it)
      if ((*it)->id == id) {
        drop(**it);  // its token leaves the scheduler now
        ctx_of_[std::size_t((*it)->slot)] = nullptr;
        reqs_.erase(it);
        return;
      }
  }

  std::int64_t size() const final { return std::int64_t(reqs_.size()) + rows_.size(); }
  const batch_step_stats& last_step() const final { return stats_; }

 protected:
  using context = typename Model::context_type;

  slot_batch(const Model& m, const batch_limits& lim) : m_(m), lim_(lim), rows_(m, lim) {}

  /// \brief Takes a removed request's queued token out of the scheduler.
  virtual void drop(const Request& r) = 0;

  /// \brief A fresh request id.
  std::int64_t new_id() { return next_id_++; }

  /// \brief Runs request `id` in the forward_batch engine beside the scheduler.
  void add_beside(std::int64_t id, const std::vector<std::int32_t>& prompt, const option_values& o,
                  const std::vector<std::int32_t>& stops) {
    inner_[rows_.add(prompt, o, stops)] = id;
  }

  /// \brief The lowest sequence slot no request holds.
  std::int32_t free_slot() {
    std::int32_t slot = 0;
    while (std::size_t(slot) < ctx_of_.size() && ctx_of_[std::size_t(slot)]) ++slot;
    if (std::size_t(slot) == ctx_of_.size()) ctx_of_.push_back(nullptr);
    return slot;
  }

  /// \brief Keeps `q`, its context published at its slot for the scheduler.
  Request& hold(std::unique_ptr<Request> q) {
    ctx_of_[std::size_t(q->slot)] = &q->ctx;
    reqs_.push_back(std::move(q));
    return *reqs_.back();
  }

  /// \brief Starts a step: the engine beside the scheduler steps first, its outputs under this
  /// engine's ids, its statistics the step's start.
  void step_beside(std::vector<batch_output>& out) {
    stats_ = {};
    if (rows_.size() == 0) return;
    for (batch_output& o : rows_.step()) {
      o.id = inner_.at(o.id);
      if (o.finished) erase_inner(o.id);
      out.push_back(std::move(o));
    }
    stats_ = rows_.last_step();
  }

  /// \brief Ends a step: finished requests give their slots back.
  void reap() {
    for (auto it = reqs_.begin(); it != reqs_.end();)
      if ((*it)->done) {
        ctx_of_[std::size_t((*it)->slot)] = nullptr;
        it = reqs_.erase(it);
      } else {
        ++it;
      }
  }

  /// \brief The request holding sequence slot `slot`.
  Request& by_slot(std::int32_t slot) {
    for (auto& q : reqs_)
      if (q->slot == slot) return *q;
    fail("batch engine: no request holds sequence ", slot);
  }

  const Model& m_;                              ///< the model every request runs
  batch_limits lim_;                            ///< the engine's limits
  std::vector<context*> ctx_of_;                ///< by scheduler sequence slot; null: free
  std::vector<std::unique_ptr<Request>> reqs_;  ///< requests holding a slot
  batch_step_stats stats_;                      ///< the last step's statistics

 private:
  void erase_inner(std::int64_t outer) {
    for (auto it = inner_.begin(); it != inner_.end(); ++it)
      if (it->second == outer) {
        inner_.erase(it);
        return;
      }
  }

  rows_batch<Model> rows_;                      // requests the scheduler cannot take
  std::map<std::int64_t, std::int64_t> inner_;  // rows_ id -> this engine's id
  std::int64_t next_id_ = 1;
};

}  // namespace muninn::frontend::detail
