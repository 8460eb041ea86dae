// The Huginn family in the front-end library: its four compiled combinations (sandwich or
// pre-norm blocks, concat adapter or additive injection), each with early exit compiled in.

#include <sstream>

#include "lm_adapter.hpp"
#include "muninn/families/huginn/family.hpp"

namespace muninn::frontend {
namespace {

using sandwich_linear = huginn_adaptive_arch;
using sandwich_add = huginn_adaptive_arch::with<injection::add>;
using prenorm_linear = huginn_adaptive_arch::with<block::pre_norm>;
using prenorm_add = huginn_adaptive_arch::with<block::pre_norm, injection::add>;

std::string string_field(const io::json& cfg, const char* key, const std::string& fallback) {
  const io::json* v = cfg.find(key);
  return v && v->is_string() ? v->as_string() : fallback;
}

detail::lm_structure structure(const huginn_config& cfg) {
  std::ostringstream rope;
  rope << "interleaved, theta " << cfg.rope_base;
  return {cfg.block_type, cfg.injection_type, rope.str(), {}, {}};
}

template <class Arch>
std::unique_ptr<loaded_model> host_model(huginn_config cfg, const io::checkpoint& ck, detail::lm_extras x) {
  using M = model<host_backend, float, Arch>;
  M m = as_kind(error_kind::checkpoint, [&] { return M(host_backend{}, std::move(cfg), ck); });
  return std::make_unique<detail::lm_model<M>>(std::move(m), std::move(x));
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
  const std::string block = string_field(*f.config, "block_type", "sandwich");
  const std::string inj = string_field(*f.config, "injection_type", "linear");
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
  if (pre) return add ? host_model<prenorm_add>(std::move(cfg), ck, std::move(x))
                      : host_model<prenorm_linear>(std::move(cfg), ck, std::move(x));
  return add ? host_model<sandwich_add>(std::move(cfg), ck, std::move(x))
             : host_model<sandwich_linear>(std::move(cfg), ck, std::move(x));
}

}  // namespace muninn::frontend
