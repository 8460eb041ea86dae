// The Mixture-of-Recursions family in the front-end library: expert-choice and token-choice
// routers on a Llama (the reference's MoRLlamaForCausalLM checkpoints).

#include <sstream>

#include "lm_adapter.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/mor/family.hpp"

namespace muninn::frontend {
namespace {

// Llama's lines, the routers and the sharing; the per-recursion copies of the block are not
// unique parameters.
detail::lm_structure structure(const mor_config& cfg) {
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
  s.more = {{"routing", routing.str()}, {"sharing", sharing.str()}};
  s.is_copy = [names = io::mor_names(cfg), cfg](const std::string& tensor) {
    for (std::int64_t r = 1; r < cfg.mor.recursions; ++r)
      for (std::int64_t l = 0; l < cfg.n_layers_in_recurrent_block; ++l)
        if (tensor.rfind(names.block(r, l) + ".", 0) == 0) return true;
    return false;
  };
  return s;
}

template <class Arch>
std::unique_ptr<loaded_model> host_model(mor_config cfg, const io::checkpoint& ck, detail::lm_extras x) {
  using M = model<host_backend, float, Arch>;
  M m = as_kind(error_kind::checkpoint, [&] { return M(host_backend{}, std::move(cfg), ck); });
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
  x.info = detail::lm_info(detail::lm_kind::mor, name, display, f, cfg, structure(cfg), ck, io::mor_tensor_specs(cfg));
  detail::read_text_files(f, x);
  x.add_special = true;
  if (cfg.mor.type == "token") return host_model<mor_token_arch>(std::move(cfg), ck, std::move(x));
  return host_model<mor_expert_arch>(std::move(cfg), ck, std::move(x));
}

}  // namespace muninn::frontend
