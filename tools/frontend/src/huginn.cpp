// The Huginn family in the front-end library: one host model for sandwich or pre-norm blocks
// with the concat adapter or additive injection, chosen from the config (huginn_host.hpp), and
// the CUDA model for Huginn-0125's own combination.

#include <sstream>

#include "huginn_host.hpp"

namespace muninn::frontend {
namespace {

detail::lm_structure structure(const huginn_config& cfg) {
  std::ostringstream rope;
  rope << "interleaved, theta " << cfg.rope_base;
  return {cfg.block_type, cfg.injection_type, rope.str(), {}, {}};
}

}  // namespace

bool huginn_family::recognizes(const model_folder& f) { return f.config && family::huginn::recognizes(*f.config); }

std::string huginn_family::redirect(operation op) {
  switch (op) {
    case operation::solve:
      return "a Huginn checkpoint: muninn solve runs TRM / HRM run folders; use muninn generate --model DIR "
             "--prompt TEXT --max-new-tokens N";
    case operation::ae:
      return "a Huginn checkpoint has no chunk autoencoder: muninn ae runs CALM models and autoencoders";
    default: return "";
  }
}

std::unique_ptr<loaded_model> huginn_family::load(const model_folder& f, const option_values& o) {
  const detail::device_choice dev = detail::device_of(o);
  const std::string block = detail::string_field(*f.config, "block_type", "sandwich");
  const std::string inj = detail::string_field(*f.config, "injection_type", "linear");
  const bool pre = block == "pre_norm", add = inj == "add";
  if (!((block == "sandwich" || pre) && (inj == "linear" || add)))
    fail_as(error_kind::config, f.config_path, ": huginn_raven with block_type '", block, "' and injection_type '", inj,
            "' is not supported; this build runs block_type sandwich or pre_norm with injection_type linear or add");
  huginn_config cfg = as_kind(error_kind::config, [&] { return family::huginn::read_config(f.dir); });
  const io::checkpoint ck = as_kind(error_kind::checkpoint, [&] { return family::huginn::open_checkpoint(f.dir, cfg); });
  detail::lm_extras x;
  x.info = detail::lm_info(detail::lm_kind::huginn, name, display, f, cfg, structure(cfg), ck, io::huginn_tensor_specs(cfg));
  detail::read_text_files(f, x);
  // Huginn's post-processor appends an end-of-text token, which a prompt must not get.
  x.add_special = false;
  if (dev.cuda) {
#if defined(MUNINN_FRONTEND_CUDA)
    if (pre || add)
      fail_as(error_kind::usage, o.spelled("device"), " cuda runs Huginn checkpoints with sandwich blocks and the concat "
              "adapter; run this one with ", o.spelled("device"), " cpu");
    return detail::load_cuda(detail::lm_kind::huginn, f, dev.bf16, std::move(x));
#endif
  }
  const host_backend be = detail::host_backend_of(o, dev);
  return detail::huginn_host::host_model<detail::huginn_host::host_arch>(be, std::move(cfg), ck, std::move(x),
                                                                          dev.weights);
}

}  // namespace muninn::frontend
