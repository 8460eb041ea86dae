// The Mixture-of-Recursions family in the front-end library: expert-choice and token-choice
// routers on a Llama (the reference's MoRLlamaForCausalLM checkpoints).

#include "lm_adapter.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/families/mor/family.hpp"

namespace muninn::frontend {
namespace {

template <class Arch>
std::unique_ptr<loaded_model> host_model(model_config cfg, const io::checkpoint& ck, detail::lm_extras x) {
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
  model_config cfg = as_kind(error_kind::config, [&] { return io::read_mor_config(f.dir, f.mor_yaml); });
  const io::checkpoint ck = as_kind(error_kind::checkpoint, [&] { return io::open_mor_checkpoint(f.dir, cfg); });
  detail::lm_extras x;
  x.info = detail::lm_info(detail::lm_kind::mor, name, display, f, cfg, ck, io::mor_tensor_specs(cfg));
  detail::read_text_files(f, x);
  x.add_special = true;
  if (cfg.mor.type == "token") return host_model<mor_token_arch>(std::move(cfg), ck, std::move(x));
  return host_model<mor_expert_arch>(std::move(cfg), ck, std::move(x));
}

}  // namespace muninn::frontend
