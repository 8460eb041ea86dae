"""Mixture-of-Recursions: every shipped fixture's logits under both routing rules, greedy ids and
depths, NLL (our PyTorch reference's expected.json, the CLI's tolerances), depth histogram."""
import numpy as np
import pytest

from conftest import CLI_DATA, DATA, read_json

FIXTURES = ["expert_cycle_r2_mlp_tanh", "expert_mcyc_L9_drop", "expert_mcyc_r3_kvshare",
            "expert_mcyc_r3_linear_sigmoid", "token_cycle_r3_sigmoid", "token_mcyc_r3_softmax_lossfree"]
# checkpoints whose recursions hold different copies of the block (each runs its own)
UNTIED = ["expert_mcyc_attn", "expert_sequence_attn", "token_mseq_mlp_norm"]


@pytest.mark.parametrize("name", FIXTURES + [f"untied/{n}" for n in UNTIED])
def test_logits_nll_and_greedy_match_the_reference(muninn, name):
    folder = DATA / "mor_untied" / name[len("untied/"):] if name.startswith("untied/") else DATA / "mor" / name
    e = read_json(folder / "expected.json")
    tol = e["tolerances"]
    m = muninn.load(folder)
    s = e["scoring"]
    for row, want in zip(s["input_ids"], s["logits"]):
        np.testing.assert_allclose(m.forward(row, routing="scoring"), np.array(want, np.float32), rtol=0,
                                   atol=tol["logits"])
    r = m.score(s["input_ids"])  # score routes by the reference's top-k (routing="scoring") by default
    assert r["routing"] == "scoring" and r["sequences"] == 2 and r["predicted"] == 22
    assert abs(r["nll"] - s["nll"]) <= tol["nll"]
    if "decode_rule" in e:
        d = e["decode_rule"]
        for row, want, depth in zip(d["input_ids"], d["logits"], d["depth"]):
            out = m.forward(row, taps=["depths"])
            np.testing.assert_allclose(out["logits"], np.array(want, np.float32), rtol=0, atol=tol["logits"])
            assert out["depths"].tolist() == depth
    g = e["greedy"]
    depths = g.get("depth", [None] * len(g["prompt"]))  # expert-choice fixtures record depths
    for prompt, new_ids, depth in zip(g["prompt"], g["new_ids"], depths):
        out = m.generate(prompt, max_new_tokens=len(new_ids), ignore_eos=True)
        assert out.ids.tolist() == new_ids
        if depth is not None:
            assert out.depths.tolist() == depth


def test_score_file_of_the_cli(mor):
    rows = [[int(t) for t in line.split()] for line in (CLI_DATA / "mor_score.txt").read_text().splitlines()]
    r = mor.score(rows)
    assert abs(r["nll"] - 5.47399) < 1e-5  # the CLI's mor_score line
    assert r["depth_counts"].tolist() == [0, 8, 8, 8]


def test_routing_option_is_checked(muninn, mor):
    with pytest.raises(muninn.UsageError, match="^routing must be causal|scoring, got 'fast'"):
        mor.forward([1, 2], routing="fast")
