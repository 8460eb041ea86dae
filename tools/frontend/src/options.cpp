// The option table of every operation and the checked getters over given values.

#include "muninn/frontend/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace muninn::frontend {
namespace {

using strings = std::vector<std::string>;
constexpr double max_int = 9007199254740992.0;  // 2^53: every integer up to it is a double
const strings recurrent = {"huginn"};
const strings softmax = {"huginn", "llama", "mor"};
const strings decoders = {"huginn", "llama", "mor", "calm"};
const strings routed = {"mor"};
const strings calm = {"calm"};

option_spec integer(std::string name, std::string metavar, std::string help, double lo, double hi,
                    std::string def = "", std::string note = "", strings families = {}) {
  option_spec s{std::move(name), std::move(metavar), std::move(help), value_type::integer, std::move(def),
                std::move(note), lo, hi, {}, std::move(families)};
  return s;
}
option_spec number(std::string name, std::string metavar, std::string help, double lo, double hi, std::string def = "",
                   std::string note = "", strings families = {}) {
  option_spec s{std::move(name), std::move(metavar), std::move(help), value_type::number, std::move(def),
                std::move(note), lo, hi, {}, std::move(families)};
  return s;
}
option_spec choice(std::string name, strings choices, std::string help, std::string def, strings families = {},
                   std::string note = "") {
  std::string metavar;
  for (const auto& c : choices) metavar += (metavar.empty() ? "" : "|") + c;
  option_spec s{std::move(name), metavar, std::move(help), value_type::choice, std::move(def), std::move(note), 0, 0,
                std::move(choices), std::move(families)};
  return s;
}
option_spec flag(std::string name, std::string help, strings families = {}) {
  option_spec s{std::move(name), "", std::move(help), value_type::flag, "", "", 0, 0, {}, std::move(families)};
  return s;
}
option_spec text(std::string name, std::string metavar, std::string help, strings families = {}, std::string def = "",
                 std::string note = "") {
  option_spec s{std::move(name), std::move(metavar), std::move(help), value_type::text, std::move(def), std::move(note),
                0, 0, {}, std::move(families)};
  return s;
}
option_spec ids_option(std::string name, std::string metavar, std::string help, strings families) {
  option_spec s = text(std::move(name), std::move(metavar), std::move(help), std::move(families));
  s.type = value_type::ids;
  return s;
}
option_spec required(option_spec s) {
  s.required = true;
  return s;
}
option_spec front_end(option_spec s) {
  s.model_free = true;
  return s;
}
option_spec cli_only(option_spec s) {
  s.cli_only = true;
  return s;
}

// ---- the building blocks shared by several operations

option_spec steps_option() {
  return integer("steps", "R", "recurrence depth r", 0, 1024, "", "the config's mean_recurrence", recurrent);
}
option_spec init_option() {
  return choice("init-state", {"zero", "random"}, "initial recurrent state (random: drawn per position from --seed)",
                "random", recurrent);
}
option_spec seed_option() {
  return integer("seed", "N", "seed of every random draw (initial state, sampling, estimators)", 0, max_int, "0");
}
option_spec config_option() {
  return text("config", "FILE.yaml", "Mixture-of-Recursions: the run's Hydra YAML (when config.json has no mor block)",
              routed);
}
option_spec ae_option() {
  return text("ae", "DIR", "CALM: the autoencoder's directory (config.json; weights when the model does not embed them)",
              calm);
}
option_spec routing_option(const std::string& def) {
  return choice("routing", {"causal", "scoring"},
                "Mixture-of-Recursions routers: causal = each token by its own router output (decode rule), scoring "
                "= the reference's top-k over the sequence",
                def, routed);
}
option_spec device_option() {
  return choice("device", {"cpu", "cuda"}, "where to run (cuda: Huginn and Llama, in a build with CUDA)", "cpu",
                {"huginn", "llama"});
}
option_spec dtype_option() {
  return choice("dtype", {"fp32", "bf16"},
                "cpu: the layers' projection matrices and the output matrix stored in bf16 (fp32 sums; CALM: "
                "its backbone's); cuda: weights and activations",
                "fp32", {"huginn", "llama", "mor", "calm", "trm"});
}
option_spec quantize_option() {
  return choice("quantize", {"none", "q8"},
                "cpu: the layers' projection matrices and the output matrix stored as 8-bit blocks of 32 with a "
                "scale each, quantized at load (fp32 sums; decode, i.e. calls of at most 8 rows, unless "
                "batch-invariant, also rounds the activations to int8 per block: --q8-activations; CALM: its "
                "backbone's)",
                "none", {"huginn", "llama", "mor", "calm", "trm"});
}
// What q8 decode (calls of at most 8 rows) does with its activation rows
// (host_backend::q8_int8_activations). Only the families that decode a token (CALM: a chunk) at a time
// take it: TRM / HRM run whole puzzles, a GEMM row per position of every puzzle (at least 16 on the
// smallest Sudoku), never 8 rows or fewer.
// Given without --quantize q8, or int8 with batch-invariant kernels, it is an error (common.hpp, device_of).
option_spec q8_activations_option() {
  return choice("q8-activations", {"int8", "fp32"},
                "with --quantize q8 on the cpu, decode (calls of at most 8 rows): int8 = round each activation "
                "row to int8 per block of 32 and multiply bytes (llama.cpp's Q8_0 arithmetic, the faster); fp32 = "
                "keep the activations exact, one rounding less (batch-invariant kernels always do)",
                "int8", {"huginn", "llama", "mor", "calm"});
}
// Serving defaults to batch-invariant sums: a request then gives the same bits in any batch.
option_spec kernels_option(const std::string& def = "fastest") {
  return choice("kernels", {"fastest", "batch-invariant"},
                "host GEMM sums: fastest = each row count its fastest kernel; batch-invariant = one order for any "
                "number of rows, so a sequence gives the same bits alone or batched (slower prefill)",
                def, {"huginn", "llama", "mor"});
}
option_spec dump_option() {
  return cli_only(front_end(text("dump", "DIR", "write the run's taps as DIR/<tap>[.step<S>].<call>.npy and DIR/taps.json")));
}
option_spec taps_option() {
  return cli_only(text("taps", "a,b,...", "with --dump: only these taps or dotted prefixes of them (all when not given)"));
}

option_spec data_option(const std::string& help) { return required(front_end(text("data", "FILE", help))); }

std::vector<option_spec> info_specs() { return {config_option(), ae_option(), dtype_option(), quantize_option()}; }

std::vector<option_spec> forward_specs() {
  return {steps_option(),
          init_option(),
          seed_option(),
          routing_option("causal"),
          cli_only(flag("show-depths", "Mixture-of-Recursions: print the recursions each position ran", routed)),
          device_option(),
          dtype_option(),
          quantize_option(),
          q8_activations_option(),
          kernels_option(),
          config_option(),
          cli_only(front_end(text("output", "FILE.npy",
                                  "write the logits of every position, float32 [tokens, vocab] (CALM: the "
                                  "normalised hidden state of every chunk, [chunks, hidden])"))),
          cli_only(ae_option()),
          dump_option(),
          taps_option()};
}

std::vector<option_spec> sampling_specs() {
  return {
      flag("greedy", "argmax decoding even when sampling options are given", softmax),
      number("temperature", "T", "sampling temperature (CALM: the likelihood-free sampler's T, in (0, 1])", 0, 1e6,
             "1", "", decoders),
      integer("top-k", "K", "keep the K most likely tokens (0: all)", 0, 2147483647, "0", "", softmax),
      number("top-p", "P", "nucleus sampling: keep the most likely tokens up to mass P, P > 0", 0, 1, "1", "", softmax),
      number("min-p", "P", "drop tokens below P times the top probability", 0, 1, "0", "", softmax),
      number("repetition-penalty", "R", "penalty on tokens already in the sequence, R > 0", 0, 1e6, "1", "", softmax),
  };
}

std::vector<option_spec> generate_specs() {
  std::vector<option_spec> v = {
      required(integer("max-new-tokens", "N", "tokens to generate at most", 0, 1 << 20)),
      steps_option(),
      init_option(),
      seed_option(),
      routing_option("causal"),
      cli_only(flag("show-depths", "Mixture-of-Recursions: print the recursions each position ran", routed)),
      device_option(),
      dtype_option(),
      quantize_option(),
      q8_activations_option(),
      kernels_option(),
      config_option(),
      cli_only(choice("stream", {"auto", "on", "off"},
                      "print tokens as they are produced (auto: when stdout is a terminal)", "auto")),
      ids_option("stop", "ID,ID", "stop after generating one of these token ids (each in [0, vocab))", softmax),
      flag("ignore-eos", "go on past the end-of-sequence ids of generation_config.json / config.json", softmax),
  };
  for (auto& s : sampling_specs()) v.push_back(s);
  const std::vector<option_spec> rest = {
      choice("exit", {"none", "kl", "entropy-diff", "latent-diff", "argmax-stable", "cosine"},
             "early-exit criterion per token", "none", recurrent),
      number("exit-threshold", "X", "exit threshold", 0, 1e30, "", "the criterion's, e.g. kl 5e-4", recurrent),
      integer("min-steps", "N", "no exit check before step N (at most --max-steps)", 0, 1024, "0", "", recurrent),
      integer("max-steps", "N", "at most N recurrence steps per token with --exit", 0, 1024, "", "--steps", recurrent),
      integer("check-every", "N", "check for exit every N steps", 1, 1024, "1", "", recurrent),
      choice("prefill-exit", {"per-token", "prompt"}, "with --exit: prompt tokens exit one by one or together",
             "per-token", recurrent),
      choice("exit-parity", {"muninn", "reference"}, "with --exit: reference = --prefill-exit prompt + last checked outputs",
             "muninn", recurrent),
      integer("kv-budget", "K", "keep the KV entries of K recurrences per core layer (0: all)", 0, 1024, "0", "",
              recurrent),
      choice("kv-fallback", {"latest", "none"}, "what an early-exited token shows at deeper steps", "latest", recurrent),
      choice("warm-start", {"none", "raw", "normalized"}, "start each new token from the previous token's final state",
             "none", recurrent),
      integer("draft-steps", "N", "self-speculative decoding: draft at N recurrences, verify at --steps (greedy)", 1,
              1024, "", "off", recurrent),
      integer("lookahead", "L", "tokens drafted per verification (needs --draft-steps)", 1, 1024, "8", "", recurrent),
      choice("sampler", {"plain", "parallel", "approx", "exact"},
             "Huginn: plain (one token per pass) or parallel (the diffusion-style sampler); CALM below T = 1: approx "
             "(the reference's batch approximation) or exact",
             "", {"huginn", "calm"}, "plain; CALM: approx"),
      integer("num-samples", "N", "CALM, --sampler approx: head samples per step", 1, 1 << 24, "200", "", calm),
      integer("max-draws", "N", "CALM, --sampler exact: head samples per step before giving up", 1, 1LL << 40, "1048576",
              "", calm),
      choice("chunk-order", {"key", "reference"},
             "CALM, --sampler approx: candidate order before the choice (reference: first appearance among the "
             "samples, as the authors' code; with --uniforms it reproduces their picks)",
             "key", calm),
      text("noise", "FILE.npy",
           "CALM: given head noise instead of the seed's, float32 [steps, S, noise_size] (S = 1 at T = 1, else "
           "--num-samples)",
           calm),
      text("uniforms", "FILE.npy", "CALM, --sampler approx below T = 1: given choice uniforms u, 0 <= u < 1, float64 [steps]",
           calm),
      ae_option(),
      integer("inner-recurrence", "N", "parallel: recurrences per sampler step", 1, 1024, "4", "", recurrent),
      integer("headway", "N", "parallel: positions the wavefront grows by per step", 1, 1 << 20, "1", "", recurrent),
      integer("max-wavefront", "N", "parallel: positions recurring at once at most (0: unbounded)", 0, 1 << 20, "128", "",
              recurrent),
      number("ema-embeds", "W", "parallel: weight of the previous step's embeddings", 0, 1, "0.1", "", recurrent),
      number("state-noise-mixing", "X", "parallel: noise mixed into the states per step", 0, 1, "0.5", "", recurrent),
      flag("constant-noise", "parallel: do not dampen the noise by 1 + recurrences so far", recurrent),
      flag("sqrt-mixer", "parallel: mix noise as x*sqrt(1-n) + sqrt(n)*noise", recurrent),
      choice("freeze", {"latent-diff", "fixed", "token-stability"}, "parallel: when tokens freeze", "latent-diff",
             recurrent),
      number("freeze-threshold", "X", "parallel: latent-diff threshold", 0, 1e30, "0.03", "", recurrent),
      flag("continuous-compute", "parallel: new positions start from the wave's last states", recurrent),
      text("cache-lookup", "full|latest-m4-compress-s<N>", "parallel: KV of the core", recurrent, "",
           "one recurrence of the core, which is latest-m4-compress-s4 on Huginn-0125's 4-layer core"),
      front_end(text("dump-states", "FILE.npy", "write every state of every recurrence step (layout below)", recurrent)),
      dump_option(),
      taps_option(),
      cli_only(flag("show-steps", "print the recurrence steps (CALM: head samples) of each generated token",
                    {"huginn", "calm"})),
  };
  v.insert(v.end(), rest.begin(), rest.end());
  return v;
}

std::vector<option_spec> score_specs() {
  return {data_option("one sequence per line: token ids (comma or space separated), or text for DIR/tokenizer.json"),
          steps_option(), init_option(), seed_option(), routing_option("scoring"), config_option(),
          dtype_option(), quantize_option()};
}

std::vector<option_spec> eval_specs() {
  return {
      data_option("documents, one per line: token ids, text for DIR/tokenizer.json, or JSON lines with \"text\""),
      required(choice("metric", {"brierlm"}, "the metric", "")),
      integer("block-size", "N", "tokens per teacher-forced block, at most the model's context", 5, 1 << 30, "8192"),
      integer("max-blocks", "M", "evaluate the first M blocks only", 1, 1 << 30, "", "every whole block"),
      seed_option(),
      cli_only(flag("verbose", "print each block's Brier-1..4 and BrierLM as it finishes")),
      steps_option(),
      init_option(),
      config_option(),
      ae_option(),
  };
}

std::vector<option_spec> demo_specs() {
  const strings shell = {"huginn"};
  const strings trm = {"trm"};
  return {
      integer("problems", "N", "evaluate the first N held-out problems", 1, 1 << 30, "", "200; TRM and MoR: every one"),
      text("depths", "1,2,4,...", "recurrence depths to evaluate, each >= 1", shell, "1,2,4,8,16,32"),
      number("exit-threshold", "X", "KL exit threshold of the r=auto row", 0, 1e30, "1e-6", "", shell),
      integer("max-steps", "N", "at most N steps per token in the r=auto row", 1, 1024, "32", "", shell),
      number("halt-threshold", "X",
             "TRM: an extra row that halts a puzzle once its q_halt logit exceeds X (the reference's rule is q_halt > 0)",
             -1e6, 1e6, "", "the run's calibrated value (expected.json), none without one", trm),
      seed_option(),
      dtype_option(),
      quantize_option(),
  };
}

std::vector<option_spec> solve_specs() {
  return {
      required(front_end(text("data", "DIR", "the dataset folder (its test/ split) or a split folder holding dataset.json"))),
      integer("max-steps", "N", "supervision steps (fixed) or at most (q)", 1, 1024, "", "the config's halt_max_steps"),
      choice("halt", {"fixed", "q"},
             "fixed: every puzzle runs --max-steps (the reference's evaluation); q: stop at the Q head's halt", "fixed"),
      number("halt-threshold", "X", "with --halt q: halt once q_halt > X instead of the reference's rule", -1e6, 1e6, "",
             "the reference's rule (q_halt > 0, or q_halt > q_continue)"),
      cli_only(flag("show", "print each puzzle's input, prediction and label grids")),
      integer("limit", "N", "the first N examples of the split only", 1, 1LL << 40, "", "every example"),
      integer("batch", "N", "puzzles per batch", 1, 1 << 16, "64"),
      dtype_option(),
      quantize_option(),
      dump_option(),
      taps_option(),
  };
}

std::vector<option_spec> ae_specs() { return {ae_option(), dump_option(), taps_option()}; }

std::vector<option_spec> tokenize_specs() { return {config_option(), ae_option()}; }

std::vector<option_spec> load_specs() {
  return {device_option(), dtype_option(), quantize_option(), q8_activations_option(), kernels_option(),
          config_option(), ae_option()};
}

// `muninn serve`: the server's own settings (read by the server, never by a family) and the
// options that choose how the model loads. A request's fields are options of `generate`.
std::vector<option_spec> serve_specs() {
  std::vector<option_spec> o = {
      front_end(text("host", "ADDR", "address to listen on (0.0.0.0: every interface)", {}, "127.0.0.1")),
      front_end(integer("port", "N", "TCP port (0: a free one, printed when listening)", 0, 65535, "8080")),
      front_end(integer("max-batch", "N", "requests decoding at once, each with its own KV cache", 1, 4096, "16")),
      front_end(integer("max-queue", "N", "requests waiting for a place in the batch; more get 429", 0, 1 << 20, "64")),
      front_end(text("api-key", "KEY", "require `Authorization: Bearer KEY` (401 otherwise)", {}, "",
                     "$MUNINN_API_KEY when set, else none")),
      front_end(integer("ctx", "N", "positions one request may hold: prompt + max_tokens", 1, 1 << 22, "",
                        "the model's context")),
      front_end(integer("prefill-chunk", "N", "prompt tokens fed per step over all new requests", 1, 1 << 20, "64")),
      front_end(number("timeout", "S", "seconds a request may take from arrival to its last token", 0.001, 1e6, "600")),
      front_end(integer("max-body", "BYTES", "request body size limit (413 above it)", 64, 1 << 30, "1048576")),
      front_end(number("grace", "S", "on SIGTERM: seconds running requests get to finish before they are cancelled", 0,
                       3600, "30")),
      front_end(choice("batching", {"continuous", "sequence"},
                       "continuous: requests join and leave at token boundaries, tokens scheduled by depth; sequence: "
                       "a batch runs until its last request ends (the baseline)",
                       "continuous")),
  };
  for (auto& s : load_specs()) o.push_back(s.name == "kernels" ? kernels_option("batch-invariant") : s);
  return o;
}

}  // namespace

const char* operation_name(operation op) {
  switch (op) {
    case operation::info: return "info";
    case operation::forward: return "forward";
    case operation::generate: return "generate";
    case operation::score: return "score";
    case operation::eval: return "eval";
    case operation::demo: return "demo";
    case operation::solve: return "solve";
    case operation::ae: return "ae";
    case operation::tokenize: return "tokenize";
    case operation::load: return "load";
    case operation::serve: return "serve";
  }
  return "?";
}

const std::vector<option_spec>& options_of(operation op) {
  // In the order of `operation`. (The tables are named *_specs: a generate_options() here would hide the type
  // muninn::generate_options in a unity build that compiles this file with a family's.)
  static const std::vector<option_spec> tables[] = {
      info_specs(),  forward_specs(), generate_specs(), score_specs(),    eval_specs(),  demo_specs(),
      solve_specs(), ae_specs(),      tokenize_specs(), load_specs(),     serve_specs()};
  return tables[static_cast<int>(op)];
}

const option_spec* find_option(operation op, const std::string& name) {
  for (const auto& s : options_of(op))
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<const option_spec*> call_options(operation op) {
  std::vector<const option_spec*> out;
  for (const auto& s : options_of(op))
    if (!s.cli_only && (op == operation::load || !find_option(operation::load, s.name))) out.push_back(&s);
  return out;
}

std::string default_text(const option_spec& s) {
  if (!s.default_value.empty()) return "(default " + s.default_value + ")";
  if (!s.default_note.empty()) return "(default: " + s.default_note + ")";
  return "";
}

std::string range_text(const option_spec& s) {
  std::ostringstream os;
  os.precision(15);
  if (s.type == value_type::integer)
    s.hi >= max_int ? os << ">= " << s.lo : os << s.lo << ".." << s.hi;
  else if (s.type == value_type::number)
    s.hi >= 1e29 ? os << ">= " << s.lo : os << "in [" << s.lo << ", " << s.hi << "]";
  return os.str();
}

option_values::option_values(operation op, std::string prefix, char dash)
    : op_(op), prefix_(std::move(prefix)), dash_(dash) {}

std::string option_values::spelled(const std::string& name) const {
  std::string s = prefix_ + name;
  for (auto& c : s)
    if (c == '-' && &c >= s.data() + prefix_.size()) c = dash_;
  return s;
}

void option_values::set(const std::string& name, std::string value) {
  if (!find_option(op_, name)) fail_as(error_kind::usage, "unknown option '", spelled(name), "' for ", operation_name(op_));
  set_extra(name, std::move(value));
}

void option_values::set_extra(const std::string& name, std::string value) {
  if (given_.count(name)) fail_as(error_kind::usage, spelled(name), " is given twice");
  given_[name] = std::move(value);
}

void option_values::reject(const std::string& name, const std::string& what) const {
  fail_as(error_kind::usage, spelled(name), " ", what);
}

const option_spec& option_values::spec(const std::string& name) const {
  const option_spec* s = find_option(op_, name);
  if (!s) fail("option table: ", operation_name(op_), " has no option '", name, "'");
  return *s;
}

std::string option_values::text(const std::string& name) const {
  const option_spec& s = spec(name);
  if (has(name)) return given_.at(name);
  if (s.default_value.empty() && !s.default_note.empty())
    fail("option table: ", name, "'s default depends on the model; read it with a fallback");
  return s.default_value;
}

std::string option_values::text(const std::string& name, const std::string& fallback) const {
  const option_spec& s = spec(name);
  if (!s.default_value.empty()) fail("option table: ", name, " has the literal default ", s.default_value);
  return has(name) ? given_.at(name) : fallback;
}

std::int64_t option_values::parse_integer(const option_spec& s, const std::string& v) const {
  const auto bad = [&] {
    const std::string range = range_text(s);
    reject(s.name, "must be an integer " + std::string(range[0] == '>' ? "" : "in ") + range + ", got '" + v + "'");
  };
  if (v.empty() || v.find_first_not_of("+-0123456789") != std::string::npos) bad();
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || double(x) < s.lo || double(x) > s.hi) bad();
  return x;
}

double option_values::parse_number(const option_spec& s, const std::string& v) const {
  errno = 0;
  char* end = nullptr;
  const double x = v.empty() ? std::nan("") : std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || x < s.lo || x > s.hi)
    reject(s.name, "must be a number " + range_text(s) + ", got '" + v + "'");
  return x;
}

std::int64_t option_values::integer(const std::string& name) const { return parse_integer(spec(name), text(name)); }
std::int64_t option_values::integer(const std::string& name, std::int64_t fallback) const {
  const std::string v = text(name, "");
  return has(name) ? parse_integer(spec(name), v) : fallback;
}
double option_values::number(const std::string& name) const { return parse_number(spec(name), text(name)); }
double option_values::number(const std::string& name, double fallback) const {
  const std::string v = text(name, "");
  return has(name) ? parse_number(spec(name), v) : fallback;
}

std::string option_values::choice(const std::string& name) const {
  const option_spec& s = spec(name);
  const std::string v = text(name);
  for (const auto& c : s.choices)
    if (c == v) return v;
  reject(name, "must be " + s.metavar + ", got '" + v + "'");
}

std::string option_values::choice(const std::string& name, const std::string& fallback) const {
  const std::string v = text(name, fallback);
  if (!has(name)) return v;
  const option_spec& s = spec(name);
  for (const auto& c : s.choices)
    if (c == v) return v;
  reject(name, "must be " + s.metavar + ", got '" + v + "'");
}

void option_values::validate() const {
  for (const auto& [name, value] : given_) {
    const option_spec* s = find_option(op_, name);
    if (!s) continue;
    switch (s->type) {
      case value_type::integer: parse_integer(*s, value); break;
      case value_type::number: parse_number(*s, value); break;
      case value_type::choice:
        if (std::find(s->choices.begin(), s->choices.end(), value) == s->choices.end())
          reject(name, "must be " + s->metavar + ", got '" + value + "'");
        break;
      case value_type::ids: parse_id_list(value, spelled(name)); break;
      case value_type::text:
        if (value.empty()) reject(name, "is empty");
        break;
      case value_type::flag: break;
    }
  }
}

std::vector<std::int32_t> option_values::ids(const std::string& name) const {
  return parse_id_list(has(name) ? given_.at(name) : text(name), spelled(name));
}

std::vector<std::int32_t> parse_id_list(const std::string& s, const std::string& what) {
  std::vector<std::int32_t> out;
  if (s.empty()) fail_as(error_kind::usage, what, " is empty");
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(start, comma - start);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || item.find_first_not_of("+-0123456789") != std::string::npos || *end != '\0' || errno == ERANGE)
      fail_as(error_kind::usage, what, " expects comma-separated integers, got '", item, "'");
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      fail_as(error_kind::usage, what, ": token id ", v, " does not fit in 32 bits");
    out.push_back(std::int32_t(v));
    start = comma + 1;
  }
  return out;
}

}  // namespace muninn::frontend
