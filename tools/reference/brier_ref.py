#!/usr/bin/env python3
"""PyTorch oracle of BrierLM's softmax estimator (the CALM authors' autoregressive baseline) with
Muninn's counter-based draws, and the writer of the fixtures in tests/data/brier/.

    python3 tools/reference/brier_ref.py --out tests/data/brier      # a few seconds on CPU

The estimator follows the CALM repository's `train/train_ar.py` (the Trainer's compute_loss in
evaluation), written again from its behaviour: for a teacher-forced block y_0 .. y_{S-1}

  * probs[t] = softmax(logits of position t) predicts y_{t+1} (t = 0 .. S-2);
  * start positions t = 0 .. S-5 (every 4-gram lies in the block); for each,
      accuracy   acc_n = prod_{k<n} probs[t+k][y_{t+1+k}]
      collision  q_0 = probs[t]; two tokens a_j, b_j are drawn from q_j; q_{j+1} is the model's
                 next-token distribution after y_0..y_t, a_0..a_j (the rollout follows the FIRST
                 draw, not the teacher-forced path); same_0 = 1, same_{j+1} = same_j and a_j == b_j;
                 the rollout stops once the draws differ
      Brier-n(t) = 2 acc_n - same_{n-1} * sum_x q_{n-1}(x)^2
  * a block's Brier-n is the mean over its starts; blocks are averaged; BrierLM =
    100 * max(b1 b2 b3 b4, 0) ** 0.25.

Draws (Muninn's rule; the reference uses torch.multinomial): draw s of rollout step j at stream
position t is uniform01_at(stream_seed(seed, 5, t), 2 j + s), turned into a token by the inverse
CDF over the fp32 probabilities (softmax in float64, one rounding to float32) summed in float64
in vocabulary order: the first v with u * S < cumsum[v], S = the sum of all of them. t is the
block's stream offset (b * block_size) plus the start's index in the block.

Fixtures written:
  softmax_case.json  a toy model (V 7, T 12): next-token logits = table[last token] + bias[position
                     of the last token]; teacher-forced logits, targets, seed, per-start Brier-1..4,
                     the block means, the rollout depth of each start.
  llama_tokens.txt   a token stream (ids, one document per line) for tests/data/llama/tiny_text.
  llama_case.json    BrierLM of that stream on that checkpoint with transformers' LlamaForCausalLM
                     (fp32, eager attention; every rollout step recomputes the whole prefix), the
                     per-block means and the smallest distance of any draw to a CDF boundary.
  mor_eval_case.json, huginn_eval_case.json, text_eval_case.json
                     what `muninn eval --metric brierlm` must print for the CLI's eval tests
                     (tests/cli/cli_eval_oracle.cmake): the MoR fixture under the causal rule
                     through tools/reference/mor_ref.py, the tiny Huginn at 2 steps from seeded
                     random initial states through tools/reference/huginn_ref.py, and text data
                     (tests/cli/data/eval_text.txt; the .jsonl holds the same documents)
                     tokenized and run by transformers. `--only eval` rewrites just these.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from huginn_ref import counter_bits, derive_seed  # noqa: E402  (stream_seed is derive_seed)

BRIER_KIND = 5
MAX_N = 4
# Smallest distance of a fixture's draw to a CDF boundary (probability units).
MIN_MARGIN = 2e-5


def uniform01_at(seed: int, index: int) -> float:
    return float(counter_bits(seed, index, 0) >> 11) * 2.0 ** -53


def brier_uniform(seed: int, position: int, step: int, sample: int) -> float:
    return uniform01_at(derive_seed(seed, BRIER_KIND, position), 2 * step + sample)


def probs32(logits) -> np.ndarray:
    """float32 probabilities: softmax in float64, then one rounding."""
    x = torch.as_tensor(np.asarray(logits, dtype=np.float32)).double()
    return torch.softmax(x, dim=-1).float().numpy()


class Draws:
    """Inverse-CDF draws; records the smallest distance of a draw to a CDF boundary."""

    def __init__(self):
        self.min_margin = float("inf")

    def draw(self, p32: np.ndarray, u: float) -> int:
        c = np.cumsum(p32.astype(np.float64))  # sequential, in vocabulary order
        total = c[-1]
        target = u * total
        v = int(np.searchsorted(c, target, side="right"))  # first v with target < c[v]
        if v >= len(c):
            v = int(np.nonzero(p32 > 0)[0][-1])
        lo = c[v - 1] if v > 0 else 0.0
        self.min_margin = min(self.min_margin, target - lo, c[v] - target)
        return v


def ar_brier_block(block, tf_logits, next_logits, seed, first_position, draws: Draws):
    """Brier-1..4 of every start of one block. tf_logits: [>= S-1, V] teacher-forced logits;
    next_logits(t, path) -> logits [V] after y_0..y_t followed by path. Returns (values [S-4, 4],
    rollout depth per start)."""
    S = len(block)
    probs = np.stack([probs32(tf_logits[t]) for t in range(S - 1)])  # [S-1, V] float32
    gold = np.array([float(probs[t][block[t + 1]]) for t in range(S - 1)], dtype=np.float64)
    stack = np.stack([gold[k:S - 1 - 3 + k] for k in range(MAX_N)], axis=-1)  # [S-4, 4]
    acc = np.cumprod(stack, axis=-1)
    values, depths = [], []
    for i in range(S - 4):
        coll = np.zeros(MAX_N)
        same = np.ones(MAX_N, dtype=bool)
        path = []
        depth = 0
        for j in range(MAX_N):
            if j == 0:
                q = probs[i]
            else:
                q = probs32(next_logits(i, list(path)))
                depth += 1
            coll[j] = float(np.sum(q.astype(np.float64) ** 2))
            if j != MAX_N - 1:
                pos = first_position + i
                a = draws.draw(q, brier_uniform(seed, pos, j, 0))
                b = draws.draw(q, brier_uniform(seed, pos, j, 1))
                path.append(a)
                same[j + 1] = same[j] and a == b
                if not same[j + 1]:
                    same[j + 1:] = False
                    break
        values.append(2.0 * acc[i] - same.astype(np.float64) * coll)
        depths.append(depth)
    return np.array(values), depths


def brierlm_of(b) -> float:
    return 100.0 * max(b[0] * b[1] * b[2] * b[3], 0.0) ** 0.25


# ---------------------------------------------------------------------------------------------
def softmax_case(out_dir: str):
    V, T, seed = 7, 12, 3
    g = torch.Generator().manual_seed(20251201)
    table = (torch.randn(V, V, generator=g) * 3.0).float()
    bias = (torch.randn(T, V, generator=g) * 0.5).float()
    targets = torch.randint(0, V, (T,), generator=g).tolist()

    def logits_after(last_token: int, last_position: int) -> np.ndarray:
        return (table[last_token] + bias[last_position]).numpy()

    tf = np.stack([logits_after(targets[t], t) for t in range(T - 1)])

    def next_logits(t, path):
        return logits_after(path[-1], t + len(path))

    draws = Draws()
    values, depths = ar_brier_block(targets, tf, next_logits, seed, 0, draws)
    assert max(depths) == 3, f"no start rolled out to the 4th token (depths {depths}); change the case"
    assert min(depths) == 0, f"every start collided at the first token (depths {depths}); change the case"
    assert draws.min_margin > 1e-6, draws.min_margin
    means = values.mean(axis=0)
    case = {
        "notes": "Toy model: the logits of the token after position p = table[token at p] + bias[p]. "
                 "Teacher-forced row t = table[targets[t]] + bias[t]; the rollout after start t with "
                 "path a_0..a_{j-1} uses table[a_{j-1}] + bias[t + j]. Written by "
                 "tools/reference/brier_ref.py.",
        "vocab": V, "tokens": T, "seed": seed, "first_position": 0,
        "table": table.flatten().tolist(), "bias": bias.flatten().tolist(),
        "targets": targets,
        "logits": tf.astype(np.float32).flatten().tolist(),
        "rollout_depth": depths,
        "per_start": values.tolist(),
        "brier": means.tolist(),
        "brierlm": brierlm_of(means),
        "min_draw_margin": draws.min_margin,
    }
    with open(os.path.join(out_dir, "softmax_case.json"), "w") as f:
        json.dump(case, f, indent=1)
    print("softmax_case: brier", means, "depths", depths)


def llama_case(out_dir: str):
    from transformers import LlamaForCausalLM

    model_rel = "llama/tiny_text"  # V 736, logits peaked enough that rollouts reach the 4th token
    model_dir = os.path.join(REPO, "tests", "data", model_rel)
    m = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    V = m.config.vocab_size
    block_size = 48
    # Documents of assorted lengths, concatenated by the evaluator without separators; 3 whole
    # blocks and a remainder that must be dropped.
    g = torch.Generator().manual_seed(4242)
    lengths = [30, 41, 17, 29, 37]
    docs = [torch.randint(0, V, (n,), generator=g).tolist() for n in lengths]
    stream = [t for d in docs for t in d]
    n_blocks = len(stream) // block_size
    assert n_blocks == 3 and len(stream) % block_size > 0

    @torch.no_grad()
    def last_logits(ids):
        return m(input_ids=torch.tensor([ids])).logits[0, -1].float().numpy()

    def evaluate(seed):
        draws = Draws()
        block_means, all_depths = [], []
        with torch.no_grad():
            for b in range(n_blocks):
                block = stream[b * block_size:(b + 1) * block_size]
                tf = m(input_ids=torch.tensor([block[:-1]])).logits[0].float().numpy()

                def next_logits(t, path, block=block):
                    return last_logits(block[:t + 1] + path)

                values, depths = ar_brier_block(block, tf, next_logits, seed, b * block_size, draws)
                block_means.append(values.mean(axis=0))
                all_depths += depths
        return draws, block_means, all_depths

    # The seed: the first from 1 whose draws all lie at least MIN_MARGIN from a CDF boundary, so
    # that a forward whose probabilities differ by ~1e-6 (another fp32 implementation) draws the
    # same tokens.
    for seed in range(1, 100):
        draws, block_means, all_depths = evaluate(seed)
        if draws.min_margin >= MIN_MARGIN:
            break
    else:
        raise AssertionError("no seed in 1..99 keeps every draw away from a CDF boundary")
    brier = np.mean(np.stack(block_means), axis=0)
    assert sum(d > 0 for d in all_depths) >= 3, f"too few rollouts: {all_depths}"
    with open(os.path.join(out_dir, "llama_tokens.txt"), "w") as f:
        for d in docs:
            f.write(" ".join(str(t) for t in d) + "\n")
    case = {
        "notes": "BrierLM of llama_tokens.txt (documents concatenated without separators, cut into "
                 "blocks of block_size, the remainder dropped) on tests/data/<model>, computed with "
                 "transformers' LlamaForCausalLM (fp32, eager attention) and Muninn's draws by "
                 "tools/reference/brier_ref.py. brier = mean over blocks of each block's mean over "
                 "its starts; brierlm = 100 max(prod, 0)^(1/4).",
        "model": model_rel, "data": "llama_tokens.txt", "block_size": block_size, "seed": seed,
        "tokens": len(stream), "blocks": n_blocks, "dropped": len(stream) - n_blocks * block_size,
        "block_means": [bm.tolist() for bm in block_means],
        "brier": brier.tolist(), "brierlm": brierlm_of(brier),
        # The same as integers (1e-9 and 1e-6 units), for tests/cli/cli_eval_oracle.cmake (CMake
        # compares integers only).
        "brier_e9": [int(round(x * 1e9)) for x in brier], "brierlm_e6": int(round(brierlm_of(brier) * 1e6)),
        "rollouts": {"starts": len(all_depths), "depth_ge1": sum(d >= 1 for d in all_depths),
                     "depth_ge2": sum(d >= 2 for d in all_depths), "depth_3": sum(d == 3 for d in all_depths)},
        "min_draw_margin": draws.min_margin, "min_margin_required": MIN_MARGIN,
        "transformers_version": __import__("transformers").__version__, "torch_version": torch.__version__,
    }
    with open(os.path.join(out_dir, "llama_case.json"), "w") as f:
        json.dump(case, f, indent=1)
    print("llama_case: brier", brier, "brierlm", case["brierlm"], "rollouts", case["rollouts"],
          "margin", draws.min_margin)


# ---------------------------------------------------------------------------------------------
# The CLI's eval cases: the stream, block size, seed and model of a `muninn eval` test, through an
# independent model (transformers, or our PyTorch reference of the family), each rollout step
# recomputing the whole prefix.


def stream_of_id_lines(path):
    with open(path) as f:
        return [int(t) for line in f for t in line.split()]


def evaluate_stream(stream, block_size, seed, logits_of):
    """BrierLM of a stream (blocks of block_size, the remainder dropped); logits_of(ids) -> [n, V]
    logits of every position of ids. Returns (draws, per-block means, depths, blocks)."""
    n_blocks = len(stream) // block_size
    draws = Draws()
    block_means, all_depths = [], []
    with torch.no_grad():
        for b in range(n_blocks):
            block = stream[b * block_size:(b + 1) * block_size]
            tf = logits_of(block[:-1])

            def next_logits(t, path, block=block):
                return logits_of(block[:t + 1] + path)[-1]

            values, depths = ar_brier_block(block, tf, next_logits, seed, b * block_size, draws)
            block_means.append(values.mean(axis=0))
            all_depths += depths
    return draws, block_means, all_depths, n_blocks


def write_eval_case(out_dir, name, model_path, data_path, block_size, args, stream, logits_of, oracle,
                    seeds=range(0, 100)):
    """Writes <name>_case.json for tests/cli/cli_eval_oracle.cmake: the figures `muninn eval
    --model <model_path> --data <data_path> --block-size B --seed S <args>` must print, S the first
    of `seeds` whose draws all lie at least MIN_MARGIN from a CDF boundary (so that another fp32
    implementation, whose probabilities differ by ~1e-6, draws the same tokens)."""
    for seed in seeds:
        draws, block_means, depths, n_blocks = evaluate_stream(stream, block_size, seed, logits_of)
        if draws.min_margin >= MIN_MARGIN:
            break
    else:
        raise AssertionError(f"{name}: no seed keeps every draw away from a CDF boundary")
    brier = np.mean(np.stack(block_means), axis=0)
    case = {
        "notes": f"BrierLM of {data_path} on {model_path} ({oracle}), Muninn's draws; written by "
                 "tools/reference/brier_ref.py. Paths are relative to the repository root.",
        "model_path": model_path, "data_path": data_path, "args": args,
        "block_size": block_size, "seed": seed,
        "tokens": len(stream), "blocks": n_blocks, "dropped": len(stream) - n_blocks * block_size,
        "block_means": [bm.tolist() for bm in block_means],
        "brier": brier.tolist(), "brierlm": brierlm_of(brier),
        "brier_e9": [int(round(x * 1e9)) for x in brier], "brierlm_e6": int(round(brierlm_of(brier) * 1e6)),
        "rollouts": {"starts": len(depths), "depth_ge1": sum(d >= 1 for d in depths),
                     "depth_3": sum(d == 3 for d in depths)},
        "min_draw_margin": draws.min_margin, "min_margin_required": MIN_MARGIN,
    }
    with open(os.path.join(out_dir, f"{name}_case.json"), "w") as f:
        json.dump(case, f, indent=1)
    print(f"{name}_case: brier", brier, "brierlm", case["brierlm"], "rollouts", case["rollouts"],
          "margin", draws.min_margin)


def mor_eval_case(out_dir):
    """Expert-choice MoR under the causal rule (what `muninn eval` runs: a teacher-forced pass
    equals decoding only under it), through our PyTorch reference of the family."""
    from mor_ref import MoRModel

    model_path = "tests/data/mor/expert_mcyc_r3_linear_sigmoid"
    data_path = "tests/cli/data/mor_score.txt"
    m = MoRModel.load(os.path.join(REPO, model_path))

    def logits_of(ids):
        logits, _ = m.forward_decode(torch.tensor([ids]))
        return logits[0].float().numpy()

    write_eval_case(out_dir, "mor_eval", model_path, data_path, 12, [],
                    stream_of_id_lines(os.path.join(REPO, data_path)), logits_of, "tools/reference/mor_ref.py, causal rule")


def huginn_eval_case(out_dir):
    """Huginn at 2 recurrence steps from random initial states drawn per position from the seed
    (Muninn's counter stream, as `--init-state random --seed 3` draws them), through our PyTorch
    reference of Huginn. The seed is fixed: it also sets the initial states."""
    from huginn_ref import Huginn

    model_path = "tests/data/huginn/tiny_f32"
    data_path = "tests/cli/data/mor_score.txt"
    m = Huginn.from_pretrained(os.path.join(REPO, model_path)).eval()
    steps, seed = 2, 3

    def logits_of(ids):
        x_ids = torch.tensor([ids])
        freqs = m._freqs(0, len(ids))
        e = m.embed_inputs(x_ids, freqs, None)
        x = m.initialize_state(e, "muninn", seed=seed, first_position=0)
        for s in range(steps):
            x = m.iterate_one_step(e, x, freqs, s, None)
        return m.predict_from_latents(x, freqs, None)[0].float().numpy()

    write_eval_case(out_dir, "huginn_eval", model_path, data_path, 20, ["--steps", str(steps)],
                    stream_of_id_lines(os.path.join(REPO, data_path)), logits_of, "tools/reference/huginn_ref.py",
                    seeds=[seed])


def text_eval_case(out_dir):
    """Text data: one document per line, encoded as transformers' tokenizer(text) does (BOS
    first), then the Llama through transformers. The JSON-lines file holds the same documents."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model_path = "tests/data/llama/tiny_text"
    data_path = "tests/cli/data/eval_text.txt"
    tok = AutoTokenizer.from_pretrained(os.path.join(REPO, model_path))
    m = LlamaForCausalLM.from_pretrained(os.path.join(REPO, model_path), dtype=torch.float32,
                                         attn_implementation="eager").eval()
    with open(os.path.join(REPO, data_path)) as f:
        docs = [line.rstrip("\n") for line in f if line.strip()]
    stream = [t for d in docs for t in tok(d)["input_ids"]]

    def logits_of(ids):
        return m(input_ids=torch.tensor([ids])).logits[0].float().numpy()

    write_eval_case(out_dir, "text_eval", model_path, data_path, 16, [], stream, logits_of,
                    "transformers' tokenizer and LlamaForCausalLM, fp32, eager attention")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "brier"))
    ap.add_argument("--only", choices=("softmax", "llama", "eval"), help="write only these cases")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    if a.only in (None, "softmax"):
        softmax_case(a.out)
    if a.only in (None, "llama"):
        llama_case(a.out)
    if a.only in (None, "eval"):
        mor_eval_case(a.out)
        huginn_eval_case(a.out)
        text_eval_case(a.out)


if __name__ == "__main__":
    main()
