#pragma once
// What every family adapter shares and no front end needs: formatting helpers and the text files
// of a checkpoint folder (tokenizer.json, end-of-sequence ids).

#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "muninn/backend/host.hpp"
#include "muninn/ops/weight.hpp"
#include "muninn/frontend/model.hpp"
#include "muninn/frontend/registry.hpp"

namespace muninn::frontend::detail {

/// \brief "1.50 KiB".
std::string human_bytes(double b);
/// \brief "1,2,3".
std::string join_ids(const std::vector<std::int32_t>& ids);

/// \brief What every adapter keeps beside its model: info, tokenizer, eos ids.
struct lm_extras {
  model_info info;
  std::shared_ptr<const io::tokenizer> tokenizer;  ///< null without tokenizer.json
  std::vector<std::int32_t> eos;
  bool add_special = false;
};

/// \brief The arguments streamed into one string: str("hidden ", 512) is "hidden 512".
template <class... A>
std::string str(A&&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

/// \brief The string value `key` of a config.json object, `fallback` when it is absent or not a
/// string (registry.cpp).
std::string string_field(const io::json& cfg, const char* key, const std::string& fallback);

/// \brief Reads tokenizer.json and the eos ids of the folder (needs x.info.vocab_size).
void read_text_files(const model_folder& f, lm_extras& x);

/// \brief info.fields += {label, value}.
inline void add_field(model_info& info, std::string label, std::string value) {
  info.fields.push_back({std::move(label), std::move(value)});
}

}  // namespace muninn::frontend::detail

namespace muninn {
struct model_config;
struct llama_config;
namespace io {
class checkpoint;
struct tensor_spec;
}  // namespace io
}  // namespace muninn

namespace muninn::frontend::detail {

/// \brief Which model<> family an info is built for.
enum class lm_kind { huginn, llama, mor };

/// \brief What `info` says of a model<> family's structure, from the family's own config type
/// (the generic model_config holds none of it): block, injection, RoPE, further lines (MoR's
/// routing and sharing), and which stored tensors are copies that are not unique parameters.
struct lm_structure {
  std::string block;                                            ///< the block
  std::string injection;                                        ///< the injection
  std::string rope;                                             ///< the RoPE pairing, theta and scaling
  std::vector<std::pair<std::string, std::string>> more;        ///< lines after `head`
  std::function<bool(const std::string& tensor)> is_copy;       ///< a stored duplicate (MoR's per-recursion blocks)
};

/// \brief The `info` fields of a model<> checkpoint (lm_info.cpp): structure, sizes, parameters
/// (unique: RoPE buffers, a tied model's duplicate lm_head and `s.is_copy` tensors excluded),
/// dtype, file size, memory and KV cache per token.
model_info lm_info(lm_kind kind, const char* family, const char* display, const model_folder& f,
                   const model_config& cfg, const lm_structure& s, const io::checkpoint& ck,
                   const std::vector<io::tensor_spec>& specs);

/// \brief The structure lines of a Llama stack (llama.cpp; Mixture-of-Recursions adds its own).
lm_structure llama_structure(const llama_config& cfg);

}  // namespace muninn::frontend::detail

namespace muninn::frontend::detail {

/// \brief --device, --dtype, --quantize and --q8-activations of `o` (cpu, fp32 when the operation has none
/// of them).
struct device_choice {
  bool cuda = false;  ///< --device cuda
  bool bf16 = false;  ///< --dtype bf16 with --device cuda: weights and activations in bf16
  weight_format weights = weight_format::f32;  ///< host: how the projection and output matrices are stored
  /// host, q8 weights: decode (at most 8 rows) rounds its activations to int8 (--q8-activations int8, the
  /// default; host_backend::q8_int8_activations)
  bool q8_int8_activations = true;
};

/// \brief Reads --device / --dtype / --quantize / --q8-activations and rejects what this build cannot
/// run. --q8-activations without --quantize q8 is an error, as --kernels is with --device cuda: a
/// choice the run would silently ignore.
inline device_choice device_of(const option_values& o) {
  device_choice d;
  const bool has_dtype = find_option(o.op(), "dtype"), has_quantize = find_option(o.op(), "quantize");
  d.cuda = find_option(o.op(), "device") && o.choice("device") == "cuda";
  const bool bf16 = has_dtype && o.choice("dtype") == "bf16";
  const bool q8 = has_quantize && o.choice("quantize") == "q8";
  if (bf16 && q8)
    fail_as(error_kind::usage, o.spelled("dtype"), " bf16 and ", o.spelled("quantize"),
            " q8 both choose how the weights are stored; give one");
  if (d.cuda && q8)
    fail_as(error_kind::usage, o.spelled("quantize"), " q8 is a host option (", o.spelled("device"),
            " cpu); CUDA runs fp32 or bf16 (", o.spelled("dtype"), ")");
  if (d.cuda)
    d.bf16 = bf16;
  else
    d.weights = bf16 ? weight_format::bf16 : q8 ? weight_format::q8 : weight_format::f32;
  if (find_option(o.op(), "q8-activations") && o.has("q8-activations")) {
    if (!q8)
      fail_as(error_kind::usage, o.spelled("q8-activations"), " chooses what q8 decode does with its activations; ",
              "it needs ", o.spelled("quantize"), " q8 (on the cpu)");
    d.q8_int8_activations = o.choice("q8-activations") == "int8";
  }
  if (d.cuda && o.has("kernels"))
    fail_as(error_kind::usage, o.spelled("kernels"), " chooses host kernels; with ", o.spelled("device"),
            " cuda, cuBLAS picks its own (batch invariance is not offered there)");
#if !defined(MUNINN_FRONTEND_CUDA)
  if (d.cuda) fail_as(error_kind::usage, "this muninn was built without CUDA (configure with -DMUNINN_ENABLE_CUDA=ON)");
#endif
  return d;
}

/// \brief The `info` line that says how a host model's weights are held: `converted` names the
/// matrices store_weights_as converted and `kept` what stays fp32.
inline void add_weights_field(model_info& info, weight_format f, std::size_t bytes,
                              const std::string& converted = "projections and output matrix",
                              const std::string& kept = "norms, biases, embedding") {
  add_field(info, "weights",
            f == weight_format::f32 ? "fp32, " + human_bytes(double(bytes)) + " (host backend)"
                                    : std::string(weight_format_name(f)) + " " + converted + " (" + kept + " fp32), " +
                                          human_bytes(double(bytes)) + " (host backend)");
}

/// \brief The host backend of a family without --kernels (CALM): q8 decode's activations as `d` says.
inline host_backend host_backend_of(const device_choice& d) {
  host_backend be;
  be.q8_int8_activations = d.q8_int8_activations;
  return be;
}

/// \brief The host backend `o` asks for (families that take --kernels): batch-invariant GEMM sums
/// with `kernels` batch-invariant (the server's default), else each row count's fastest kernel;
/// q8 decode's activations as `d` says. An explicit --q8-activations int8 with batch-invariant
/// kernels is an error: their one-row GEMM keeps fp32 activations, so that a decode step alone
/// gives the bits of the same row in a batch.
inline host_backend host_backend_of(const option_values& o, const device_choice& d) {
  host_backend be = host_backend_of(d);
  be.batch_invariant = find_option(o.op(), "kernels") && o.choice("kernels") == "batch-invariant";
  if (be.batch_invariant && d.q8_int8_activations && o.has("q8-activations"))
    fail_as(error_kind::usage, o.spelled("q8-activations"), " int8 does not combine with ", o.spelled("kernels"),
            " batch-invariant", o.has("kernels") ? "" : " (the default here)",
            ", whose one-row GEMM keeps fp32 activations so that a decode step gives the bits of the same row "
            "in a batch; give ", o.spelled("kernels"), " fastest or ", o.spelled("q8-activations"), " fp32");
  return be;
}

#if defined(MUNINN_FRONTEND_CUDA)
/// \brief A Huginn (sandwich blocks, concat adapter) or Llama model on the first CUDA device
/// (cuda.cu, the library's nvcc translation unit); `x` already holds info and text files.
std::unique_ptr<loaded_model> load_cuda(lm_kind kind, const model_folder& f, bool bf16, lm_extras x);
#endif

}  // namespace muninn::frontend::detail
