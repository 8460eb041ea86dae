// The Mixture-of-Recursions family in the front-end library: expert-choice and token-choice
// routers on a Llama (the reference's MoRLlamaForCausalLM checkpoints).

#include <map>
#include <set>
#include <sstream>

#include "lm_batch.hpp"
#include "slot_batch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/mor/copies.hpp"
#include "muninn/families/mor/family.hpp"
#include "muninn/runtime/depthwise_batching.hpp"

namespace muninn::frontend {
namespace {

// How the recursions hold the block: one copy for all, or which parts each recursion stores apart.
std::string block_copies(const recursion_copies& c) {
  std::ostringstream os;
  if (c.tied()) {
    os << "one copy, shared by all " << c.recursions << " recursions";
    return os.str();
  }
  os << "as stored per recursion; distinct copies of " << c.recursions * c.block << " stored:";
  for (std::size_t p = 0; p < c.parts.size(); ++p) os << (p ? ", " : " ") << c.parts[p].label << " " << c.distinct(p);
  return os.str();
}

// Llama's lines, the routers, the sharing and the block's copies; a recursion's stored copy that
// equals one stored before it is not a unique parameter (it shares that one's memory).
detail::lm_structure structure(const mor_config& cfg, const io::checkpoint& ck) {
  detail::lm_structure s = detail::llama_structure(cfg);
  const mor_settings& m = cfg.mor;
  std::ostringstream routing, sharing;
  routing << m.type << "-choice, " << m.router_type << " router, " << m.router_func << ", alpha " << m.alpha;
  if (m.type == "expert") {
    routing << ", capacity";
    for (std::int64_t i = 0; i < m.recursions; ++i) routing << (i ? "/" : " ") << router::expert_choice::capacity(m, i);
  }
  sharing << m.sharing << ", " << m.recursions << " recursions of a " << cfg.n_layers_in_recurrent_block << "-layer block"
          << (m.kv_sharing ? ", recursive KV sharing" : "");
  const recursion_copies copies = find_recursion_copies(ck, cfg);
  s.more = {{"routing", routing.str()}, {"sharing", sharing.str()}, {"block copies", block_copies(copies)}};
  const std::vector<std::string> shared = shared_copy_tensors(copies, cfg);
  s.is_copy = [set = std::set<std::string>(shared.begin(), shared.end())](const std::string& tensor) {
    return set.count(tensor) > 0;
  };
  return s;
}

// Expert-choice Mixture-of-Recursions served depth-wise: decode tokens of every request share one
// pool in which each recurs at its own depth (one shared-block call per step over all of them, a
// token that stops routing frees its row for another request's token at once), and the last layer
// runs on the tokens that stopped in that step. A prompt is prefilled alone, in one call (the
// router sees the whole call). Requests routed by the reference's scoring rule, which is not
// causal, go to the forward_batch engine beside it.
template <class Model>
struct depthwise_request {
  depthwise_request(std::int64_t i, std::int32_t s, generate_options o, typename Model::context_type c,
                    std::vector<std::int32_t> p)
      : id(i), slot(s), g(std::move(o)), ctx(std::move(c)), smp(g.sampling), prompt(std::move(p)) {}
  std::int64_t id;
  std::int32_t slot;  // its sequence index in the batcher
  generate_options g;
  typename Model::context_type ctx;
  sampler smp;
  std::vector<std::int32_t> prompt;
  bool prefilled = false, done = false;
  std::int64_t produced = 0;
};

template <class Model>
class depthwise_batch final : public detail::slot_batch<Model, depthwise_request<Model>> {
  using base = detail::slot_batch<Model, depthwise_request<Model>>;
  using request = depthwise_request<Model>;
  using base::lim_;
  using base::m_;
  using base::stats_;

 public:
  depthwise_batch(const Model& m, const batch_limits& lim)
      : base(m, lim), batcher_(m, this->ctx_of_, depthwise_options{std::max<std::int64_t>(1, lim.max_requests), 1}) {}

  std::int64_t add(const std::vector<std::int32_t>& prompt, const option_values& o,
                   const std::vector<std::int32_t>& stops) override {
    detail::lm_request_options r = detail::lm_request_from(m_, prompt, o, lim_.context);
    const std::int64_t id = this->new_id();
    if (r.g.run.routing != routing_mode::causal) {
      this->add_beside(id, prompt, o, stops);
      return id;
    }
    r.g.stop_ids = stops;
    r.lim.max_chunk = std::int64_t(prompt.size());
    this->hold(std::make_unique<request>(id, this->free_slot(), r.g, m_.make_context(r.lim), prompt));
    return id;
  }

  std::vector<batch_output> step() override {
    std::vector<batch_output> out;
    this->step_beside(out);
    std::int64_t budget = lim_.prefill_tokens;
    for (auto& q : this->reqs_) {  // prompts, each in one call, at least one per step
      request& r = *q;
      const std::int64_t n = std::int64_t(r.prompt.size());
      if (r.prefilled || (stats_.prefill_tokens > 0 && n > budget)) continue;
      const auto logits = m_.forward(r.ctx, r.prompt, r.g.run, logits_for::last);
      r.prefilled = true;
      budget -= n;
      stats_.prefill_tokens += n;
      stats_.rows += n;
      ++stats_.requests;
      take(r, logits.data(), out);
    }
    if (batcher_.busy()) {
      const std::int64_t recurring = batcher_.recurring();
      std::vector<float> logits;
      const std::vector<std::int32_t> seqs = batcher_.step(logits);
      stats_.rows += recurring;
      stats_.layer_rows += recurring;
      const std::int64_t V = m_.config().vocab_size;
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        ++stats_.requests;
        take(this->by_slot(seqs[i]), logits.data() + std::int64_t(i) * V, out);
      }
    }
    this->reap();
    return out;
  }

 private:
  void drop(const request& r) override { batcher_.drop(r.slot); }

  // The next token from logits, as generate samples it; it joins the pool unless the request ends.
  void take(request& r, const float* logits, std::vector<batch_output>& out) {
    batch_output o = detail::sample_next(r, logits, m_.config().vocab_size);
    if (!o.finished) batcher_.push(r.slot, o.tokens.back());
    out.push_back(std::move(o));
  }

  muninn::detail::depthwise_batcher<Model> batcher_;
};

template <class Model>
std::unique_ptr<batch_engine> make_depthwise_batch(const Model& m, const batch_limits& lim) {
  if (!lim.by_depth) return detail::make_rows_batch(m, lim);
  return std::make_unique<depthwise_batch<Model>>(m, lim);
}

template <class Arch>
std::unique_ptr<loaded_model> host_model(host_backend be, mor_config cfg, const io::checkpoint& ck,
                                         detail::lm_extras x, weight_format weights) {
  using M = model<host_backend, float, Arch>;
  M m = as_kind(error_kind::checkpoint, [&] { return M(be, std::move(cfg), ck, weights); });
  detail::add_weights_field(x.info, weights, m.weight_bytes());
  if constexpr (std::is_same_v<typename Arch::router_policy, router::expert_choice>)
    return std::make_unique<detail::lm_model<M>>(std::move(m), std::move(x), &make_depthwise_batch<M>);
  else
    return std::make_unique<detail::lm_model<M>>(std::move(m), std::move(x));
}

}  // namespace

bool mor_family::recognizes(const model_folder& f) {
  return f.config && (family::mor::recognizes(*f.config) || !f.mor_yaml.empty());
}

std::string mor_family::redirect(operation op) {
  switch (op) {
    case operation::solve:
      return "a Mixture-of-Recursions checkpoint: muninn solve runs TRM / HRM run folders; use muninn score or "
             "muninn generate";
    case operation::ae:
      return "a Mixture-of-Recursions checkpoint has no chunk autoencoder: muninn ae runs CALM models and autoencoders";
    default: return "";
  }
}

std::unique_ptr<loaded_model> mor_family::load(const model_folder& f, const option_values& o) {
  const detail::device_choice dev = detail::device_of(o);
  if (dev.cuda)
    fail_as(error_kind::usage, o.spelled("device"), " cuda runs Huginn and Llama checkpoints; this is ", what,
            ": run it with ", o.spelled("device"), " cpu");
  mor_config cfg = as_kind(error_kind::config, [&] { return io::read_mor_config(f.dir, f.mor_yaml); });
  const io::checkpoint ck = as_kind(error_kind::checkpoint, [&] { return io::open_mor_checkpoint(f.dir, cfg); });
  detail::lm_extras x;
  x.info = detail::lm_info(detail::lm_kind::mor, name, display, f, cfg, structure(cfg, ck), ck, io::mor_tensor_specs(cfg));
  detail::read_text_files(f, x);
  x.add_special = true;
  const host_backend be = detail::host_backend_of(o, dev);
  if (cfg.mor.type == "token") return host_model<mor_token_arch>(be, std::move(cfg), ck, std::move(x), dev.weights);
  return host_model<mor_expert_arch>(be, std::move(cfg), ck, std::move(x), dev.weights);
}

}  // namespace muninn::frontend
