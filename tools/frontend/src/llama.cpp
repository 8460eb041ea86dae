// The Llama family in the front-end library: Hugging Face LlamaForCausalLM checkpoints.

#include <sstream>

#include "lm_batch.hpp"
#include "muninn/families/llama/arch.hpp"
#include "muninn/families/llama/family.hpp"

namespace muninn::frontend {

detail::lm_structure detail::llama_structure(const llama_config& cfg) {
  std::ostringstream rope;
  rope << "rotate-half, theta " << cfg.rope_base;
  if (cfg.rope_type != "default") rope << ", " << cfg.rope_type << " scaling x" << cfg.rope_factor;
  return {"pre_norm", "none (no recurrence)", rope.str(), {}, {}};
}

bool llama_family::recognizes(const model_folder& f) { return f.config && family::llama::recognizes(*f.config); }

std::string llama_family::redirect(operation op) {
  switch (op) {
    case operation::demo:
      return "a Llama checkpoint has no demo: muninn demo runs the shipped demo models (examples/models/demo, "
             "mor_demo, trm_sudoku); try muninn generate --model DIR --prompt TEXT --max-new-tokens N";
    case operation::solve:
      return "a Llama checkpoint: muninn solve runs TRM / HRM run folders; use muninn generate --model DIR --prompt "
             "TEXT --max-new-tokens N";
    case operation::ae:
      return "a Llama checkpoint has no chunk autoencoder: muninn ae runs CALM models and autoencoders";
    default: return "";
  }
}

std::unique_ptr<loaded_model> llama_family::load(const model_folder& f, const option_values& o) {
  const detail::device_choice dev = detail::device_of(o);
  llama_config cfg = as_kind(error_kind::config, [&] { return family::llama::read_config(f.dir); });
  const io::checkpoint ck = as_kind(error_kind::checkpoint, [&] { return family::llama::open_checkpoint(f.dir, cfg); });
  detail::lm_extras x;
  x.info = detail::lm_info(detail::lm_kind::llama, name, display, f, cfg, detail::llama_structure(cfg), ck,
                           io::llama_tensor_specs(cfg));
  detail::read_text_files(f, x);
  x.add_special = true;  // a Llama tokenizer's post-processor puts BOS in front, as transformers does by default
  if (dev.cuda) {
#if defined(MUNINN_FRONTEND_CUDA)
    return detail::load_cuda(detail::lm_kind::llama, f, dev.bf16, std::move(x));
#endif
  }
  using M = model<host_backend, float, llama_arch>;
  // Converted layer by layer while it loads: the fp32 stack is never resident as a whole.
  M m = as_kind(error_kind::checkpoint, [&] { return M(detail::host_backend_of(o, dev), std::move(cfg), ck, dev.weights); });
  detail::add_weights_field(x.info, dev.weights, m.weight_bytes());
  return std::make_unique<detail::lm_model<M>>(std::move(m), std::move(x));
}

}  // namespace muninn::frontend
