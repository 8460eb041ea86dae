#pragma once
// The flags of every muninn subcommand, in one place: each command parses against its spec and
// `--help` prints it, so what the help lists is exactly what the command accepts.

#include <iostream>
#include <string>
#include <vector>

#include "cli_args.hpp"

namespace muninn::cli {

inline flag_spec model_flag() { return {"--model", "DIR", "checkpoint directory: config.json and *.safetensors", true}; }

/// Flags shared by forward and generate: depth, initial state, device.
inline std::vector<flag_spec> run_flags() {
  return {{"--steps", "R", "recurrence depth r (default: the config's mean_recurrence)"},
          {"--init-state", "zero|random", "initial recurrent state (default random, drawn per position from --seed)"},
          {"--seed", "N", "seed of the random initial state and of sampling, >= 0 (default 0)"},
          {"--device", "cpu|cuda", "where to run (default cpu; cuda needs a build with -DMUNINN_ENABLE_CUDA=ON)"},
          {"--dtype", "fp32|bf16", "weights and activations (default fp32; bf16 needs --device cuda)"},
          {"--routing", "causal|scoring", "Mixture-of-Recursions: per-token rule (default) or the reference's top-k"},
          {"--show-depths", "", "Mixture-of-Recursions: print the recursions each position ran"},
          {"--config", "FILE.yaml", "Mixture-of-Recursions: the run's Hydra YAML (when config.json has no mor block)"}};
}

inline command_spec info_spec() {
  return {"info", "--model DIR", "config, parameter count, dtype and memory of a checkpoint",
          {model_flag(), {"--config", "FILE.yaml", "Mixture-of-Recursions: the run's Hydra YAML"},
           {"--ae", "DIR", "CALM: the autoencoder's directory (its config.json is always needed)"}},
          ""};
}

inline command_spec forward_spec() {
  command_spec s{"forward", "--model DIR --tokens 1,2,3 [flags]",
                 "one forward pass: the argmax of every position's logits (and all logits with --output)",
                 {model_flag(), {"--tokens", "1,2,3", "input token ids", true}},
                 "--output writes float32 logits of shape [n_tokens, vocab] as .npy."};
  for (auto& f : run_flags()) s.flags.push_back(f);
  s.flags.push_back({"--output", "FILE.npy", "write the logits of every position"});
  return s;
}

/// The --dump-states layout (docs/inference.md states the same; state_dump in commands.hpp writes it).
inline const char* dump_states_notes =
    "--dump-states FILE.npy writes float32 [positions, steps, h]: entry [i, s] is the raw recurrent\n"
    "state (before ln_f) of the token at position i of prompt + generated tokens after recurrence\n"
    "step s (0-based). Only positions the model ran are written: the prompt and every generated\n"
    "token but the last, which is emitted without being fed back, so P prompt and G >= 1 generated\n"
    "tokens give P + G - 1 rows (0 rows when G = 0). `steps` is the deepest recurrence the run\n"
    "allowed: the largest of --steps, --max-steps and --draft-steps. Steps a token did not run\n"
    "(it exited early, or its pass was shallower) are NaN. With --draft-steps a row holds the\n"
    "verification pass of its position.";

inline std::vector<flag_spec> generate_only_flags() {
  return {
      {"--greedy", "", "argmax decoding even when sampling flags are given"},
      {"--stop", "ID,ID", "stop after generating one of these token ids (each in [0, vocab))"},
      {"--exit", "none|kl|entropy-diff|latent-diff|argmax-stable|cosine", "early-exit criterion per token (default none)"},
      {"--exit-threshold", "X", "exit threshold, >= 0 (default: the criterion's, e.g. kl 5e-4)"},
      {"--min-steps", "N", "no exit check before step N (default 0; at most --max-steps)"},
      {"--max-steps", "N", "at most N recurrence steps per token with --exit (default --steps)"},
      {"--check-every", "N", "check for exit every N steps, >= 1 (default 1)"},
      {"--prefill-exit", "per-token|prompt", "with --exit: prompt tokens exit one by one (default) or together"},
      {"--exit-parity", "muninn|reference", "with --exit: reference = --prefill-exit prompt + last checked outputs"},
      {"--kv-budget", "K", "keep the KV entries of K recurrences per core layer (default 0: all)"},
      {"--kv-fallback", "latest|none", "what an early-exited token shows at deeper steps (default latest)"},
      {"--warm-start", "raw|normalized", "start each new token from the previous token's final state"},
      {"--draft-steps", "N", "self-speculative decoding: draft at N recurrences, verify at --steps (greedy)"},
      {"--lookahead", "L", "tokens drafted per verification, >= 1 (default 8; needs --draft-steps)"},
      {"--temperature", "T", "sampling temperature, >= 0 (default 1)"},
      {"--top-k", "K", "keep the K most likely tokens, >= 0 (default 0: all)"},
      {"--top-p", "P", "nucleus sampling, in (0, 1] (default 1)"},
      {"--min-p", "P", "drop tokens below P times the top probability, in [0, 1] (default 0)"},
      {"--repetition-penalty", "R", "penalty on tokens already in the sequence, > 0 (default 1)"},
      {"--sampler", "plain|parallel|approx|exact",
       "plain: one token per pass (default); parallel: the diffusion-style sampler; CALM below T = 1: approx "
       "(the reference's, default) or exact"},
      {"--num-samples", "N", "CALM, --sampler approx: head samples per step, >= 1 (default 200)"},
      {"--max-draws", "N", "CALM, --sampler exact: head samples per step before giving up (default 1048576)"},
      {"--ae", "DIR", "CALM: the autoencoder's directory (config.json; weights when the model does not embed them)"},
      {"--inner-recurrence", "N", "parallel: recurrences per sampler step, >= 1 (default 4)"},
      {"--headway", "N", "parallel: positions the wavefront grows by per step, >= 1 (default 1)"},
      {"--max-wavefront", "N", "parallel: positions recurring at once at most, 0 = unbounded (default 128)"},
      {"--ema-embeds", "W", "parallel: weight of the previous step's embeddings, in [0, 1] (default 0.1)"},
      {"--state-noise-mixing", "X", "parallel: noise mixed into the states per step, in [0, 1] (default 0.5)"},
      {"--constant-noise", "", "parallel: do not dampen the noise by 1 + recurrences so far"},
      {"--sqrt-mixer", "", "parallel: mix noise as x*sqrt(1-n) + sqrt(n)*noise"},
      {"--freeze", "latent-diff|fixed|token-stability", "parallel: when tokens freeze (default latent-diff)"},
      {"--freeze-threshold", "X", "parallel: latent-diff threshold, >= 0 (default 0.03)"},
      {"--continuous-compute", "", "parallel: new positions start from the wave's last states"},
      {"--cache-lookup", "full|latest-m4-compress-s4", "parallel: KV of the core (default latest-m4-compress-s4)"},
      {"--dump-states", "FILE.npy", "write every state of every recurrence step (layout below)"},
      {"--show-steps", "", "print the recurrence steps of each generated token"},
  };
}

inline command_spec generate_spec() {
  command_spec s{"generate", "--model DIR (--tokens 1,2,3 | --prompt TEXT | --chat TEXT) --max-new-tokens N [flags]",
                 "decode with the KV cache, greedy or sampled, at fixed depth or with early exit",
                 {model_flag(),
                  {"--tokens", "1,2,3", "prompt token ids", true},
                  {"--prompt", "TEXT", "prompt text, encoded with DIR/tokenizer.json", true},
                  {"--chat", "TEXT", "a user message, rendered with the chat template of DIR/tokenizer_config.json", true},
                  {"--system", "TEXT", "with --chat: a system message before the user's"},
                  {"--max-new-tokens", "N", "tokens to generate at most, >= 0", true}},
                 std::string("Prints the decoded text (with --prompt or --chat), the steps per token (with --show-steps) and,\n"
                             "as the last line, the generated ids, comma-separated.\n"
                             "Decoding is greedy unless a sampling flag (--temperature, --top-k, --top-p, --min-p,\n"
                             "--repetition-penalty) is given without --greedy.\n\n") +
                     dump_states_notes};
  for (auto& f : run_flags()) s.flags.push_back(f);
  for (auto& f : generate_only_flags()) s.flags.push_back(f);
  return s;
}

inline command_spec score_spec() {
  command_spec s{"score", "--model DIR --data FILE [flags]",
                 "mean next-token NLL of sequences (Mixture-of-Recursions: with the depth histogram)",
                 {model_flag(),
                  {"--data", "FILE", "one sequence per line: token ids (comma or space separated), or text for DIR/tokenizer.json",
                   true}},
                 "A Mixture-of-Recursions model routes by the reference's top-k here (--routing scoring) unless\n"
                 "--routing causal is given: the numbers its paper reports are scored that way."};
  for (auto& f : run_flags())
    if (f.name != "--device" && f.name != "--dtype" && f.name != "--show-depths") s.flags.push_back(f);
  return s;
}

inline command_spec eval_spec() {
  command_spec s{"eval", "--model DIR --data FILE --metric brierlm [flags]",
                 "BrierLM of a checkpoint on a token stream: teacher-forced blocks, Brier-1..4 and their combination",
                 {model_flag(),
                  {"--data", "FILE",
                   "documents, one per line: token ids, text for DIR/tokenizer.json, or JSON lines with \"text\"", true},
                  {"--metric", "brierlm", "the metric (brierlm)", true},
                  {"--block-size", "N", "tokens per teacher-forced block, >= 5, at most the model's context (default 8192)"},
                  {"--max-blocks", "M", "evaluate the first M blocks only, >= 1 (default: every whole block)"},
                  {"--seed", "N", "seed of the estimator's draws (and of a random initial state), >= 0 (default 0)"},
                  {"--verbose", "", "print each block's Brier-1..4 and BrierLM as it finishes"}},
                 "The documents are concatenated with nothing inserted (text is encoded with the tokenizer's\n"
                 "special tokens, as transformers' tokenizer(text) does) and cut into blocks of --block-size\n"
                 "tokens; the remainder is dropped. Each block runs teacher-forced; per-block Brier-n means are\n"
                 "averaged over blocks and combined: BrierLM = 100 * max(b1*b2*b3*b4, 0)^(1/4). The block size\n"
                 "changes the figure: compare numbers only at equal block sizes. Prints\n"
                 "  metric=brierlm blocks=B block_size=N tokens=T dropped=D seed=S\n"
                 "  brier1=... brier2=... brier3=... brier4=...\n"
                 "  brierlm=...\n"
                 "A Mixture-of-Recursions model routes by the causal rule here. See docs/brierlm.md."};
  for (auto& f : run_flags())
    if (f.name == "--steps" || f.name == "--init-state" || f.name == "--config") s.flags.push_back(f);
  s.flags.push_back({"--ae", "DIR", "CALM: the autoencoder's directory (its config.json is always needed)"});
  return s;
}

inline command_spec demo_spec() {
  return {"demo", "[flags]",
          "accuracy of the embedded shell-game model at several recurrence depths and with KL exit",
          {{"--model", "DIR",
            "demo model directory with demo.json (default: the shipped examples/models/demo), or a TRM run folder "
            "such as examples/models/trm_sudoku"},
           {"--problems", "N", "evaluate the first N held-out problems, >= 1 (default 200; TRM: every puzzle)"},
           {"--depths", "1,2,4,...", "recurrence depths to evaluate (default 1,2,4,8,16,32)"},
           {"--exit-threshold", "X", "KL exit threshold of the r=auto row, >= 0 (default 1e-6)"},
           {"--max-steps", "N", "at most N steps per token in the r=auto row, >= 1 (default 32)"},
           {"--seed", "N", "seed, >= 0 (default 0; the demo starts from a zero state)"}},
          "A progress bar is drawn on stderr when stderr is a terminal. With a TRM run folder the demo prints\n"
          "the exact-puzzle accuracy after 1, 2, 4, 8 and 16 supervision steps and with the learned Q-halt."};
}

/// \brief `muninn solve`'s flags.
inline command_spec solve_spec() {
  return {"solve", "--model DIR --data DIR [flags]",
          "a TRM / HRM run on a puzzle dataset: exact and token accuracy, mean supervision steps, time per puzzle",
          {{"--model", "DIR", "the run's folder (newest step_N, all_config.yaml) or a step_N file", true},
           {"--data", "DIR", "the dataset folder (its test/ split) or a split folder holding dataset.json", true},
           {"--max-steps", "N", "supervision steps (fixed) or at most (q), >= 1 (default: the config's halt_max_steps)"},
           {"--halt", "q|fixed", "fixed: every puzzle runs --max-steps (the reference's evaluation, default); q: stop at the Q head's halt"},
           {"--show", "", "print each puzzle's input, prediction and label grids"},
           {"--limit", "N", "the first N examples of the split only, >= 1"},
           {"--batch", "N", "puzzles per batch, >= 1 (default 64)"}},
          "Token accuracy counts every label but ignore_label_id; exact: all of a puzzle's counted labels right.\n"
          "A progress bar is drawn on stderr when stderr is a terminal."};
}

/// \brief `muninn ae`'s flags.
inline command_spec ae_spec() {
  return {"ae",
          "--model DIR (--tokens 1,2,3,4 | --prompt TEXT) [flags]",
          "CALM chunk autoencoder round trip: encode each chunk, decode its mean, report token accuracy",
          {{"--model", "DIR", "an autoencoder directory, or a CALM directory (its embedded or --ae autoencoder)", true},
           {"--tokens", "1,2,3,4", "token ids", true},
           {"--prompt", "TEXT", "text, encoded with DIR/tokenizer.json", true},
           {"--ae", "DIR", "with a CALM directory: the autoencoder's directory (config.json, and weights if not embedded)"}},
          "A length that is not a multiple of the chunk size is padded with the pad token, and accuracy\n"
          "counts only the given tokens. Prints the reconstructed ids, then `accuracy=A (n/N tokens)`."};
}

/// \brief Every subcommand, in the order `muninn --help` lists them.
inline std::vector<command_spec> all_specs() {
  return {demo_spec(), info_spec(), forward_spec(), generate_spec(), score_spec(), eval_spec(), ae_spec(),
          solve_spec()};
}

/// \brief "  --steps R" padded to the help column.
inline std::string flag_label(const flag_spec& f) {
  std::string s = "  " + f.name + (f.metavar.empty() ? "" : " " + f.metavar);
  return s.size() < 29 ? s + std::string(30 - s.size(), ' ') : s + "\n" + std::string(30, ' ');
}

/// \brief `muninn <command> --help`: synopsis, summary, one line per flag, notes.
inline void print_command_help(const command_spec& s, std::ostream& os) {
  os << "usage: muninn " << s.name << " " << s.synopsis << "\n\n" << s.summary << "\n\nflags:\n";
  for (const auto& f : s.flags) os << flag_label(f) << f.help << "\n";
  os << flag_label({"-h, --help", "", ""}) << "print this help and exit\n";
  if (!s.notes.empty()) os << "\n" << s.notes << "\n";
}

/// \brief The optional flags of `s` as "[--steps R] [--greedy] ...", wrapped at about 100 columns;
/// empty when every flag is in the synopsis.
inline std::string optional_flags_line(const command_spec& s, const std::string& indent) {
  std::string out, line;
  for (const auto& f : s.flags) {
    if (f.in_synopsis) continue;
    const std::string item = "[" + f.name + (f.metavar.empty() ? "" : " " + f.metavar) + "]";
    if (!line.empty() && line.size() + item.size() + 1 > 100 - indent.size()) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return line.empty() ? out : out + indent + line + "\n";
}

/// \brief `muninn --help`: every command with every flag it takes.
inline void print_usage(std::ostream& os) {
  os << "usage: muninn <command> [flags]        muninn <command> --help: the flags of one command\n\ncommands:\n";
  for (const auto& s : all_specs()) {
    os << "  " << s.name << std::string(10 - s.name.size(), ' ') << s.synopsis << "\n"
       << optional_flags_line(s, "            ") << "            " << s.summary << "\n";
  }
  os << "\n--version prints the version.\n";
}

}  // namespace muninn::cli
