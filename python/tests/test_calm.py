"""CALM: generation at every sampler (the ids the CLI's tests expect, from our PyTorch reference),
the chunk autoencoder against expected.json and BrierLM."""
import numpy as np
import pytest

from conftest import CLI_DATA, DATA, read_json

E = read_json(DATA / "calm" / "expected.json")


@pytest.mark.parametrize("case", E["generate"], ids=[g["name"] for g in E["generate"]])
def test_generation_matches_the_reference(calm, case):
    opts = dict(max_new_tokens=case["max_length"] - len(case["padded_prompt"]), seed=case["seed"],
                temperature=case["temperature"], sampler=case["sampler"])
    if "num_samples" in case:
        opts["num_samples"] = case["num_samples"]
    out = calm.generate(case["prompt"], **opts)
    assert out.ids.tolist() == case["output"][len(case["prompt"]):]


def test_cli_generation_lines(calm, muninn):
    prompt = [12, 50, 30, 27, 29]
    assert calm.generate(prompt, max_new_tokens=16, seed=7).ids.tolist() == \
        [40, 62, 41, 53, 46, 17, 14, 61, 51, 29, 19, 16, 11, 2, 45, 16]
    out = calm.generate(prompt, max_new_tokens=16, seed=7, temperature=0.4, sampler="exact")
    assert out.ids.tolist() == [40, 12, 41, 12, 62, 7, 41, 31, 60, 30, 22, 11, 33, 14, 56, 16]
    assert len(out.steps) == 4 and out.steps.min() >= 1  # head samples per chunk
    text = muninn.load(DATA / "calm" / "calm_safetensors", ae=str(DATA / "calm" / "ae"))
    out = text.generate("Hello world", max_new_tokens=16, seed=7)
    assert out.ids.tolist() == [24, 39, 10, 29, 44, 27, 10, 35, 58, 53, 45, 2, 8, 39, 18, 29]
    assert out.text == "wLiBQziH?ZRagLqB"  # tokenizer.json: id 58 is "?"


def test_autoencoder_matches_the_reference(calm, muninn):
    mean, log_std = calm.ae_encode(E["ids"])
    l = E["config"]["latent_size"]
    assert mean.shape == (len(E["ids"]) // 4, l) and log_std.shape == mean.shape
    np.testing.assert_allclose(mean.ravel(), E["ae"]["mean"], rtol=0, atol=E["tolerances"]["float"])
    np.testing.assert_allclose(log_std.ravel(), E["ae"]["log_std"], rtol=0, atol=E["tolerances"]["float"])
    logits = calm.ae_decode(mean, return_logits=True)
    np.testing.assert_allclose(logits.ravel(), E["ae"]["decoded_logits"], rtol=0, atol=E["tolerances"]["float"])
    assert calm.ae_decode(mean).tolist() == E["ae"]["decoded_ids"]
    ae = muninn.load(DATA / "calm" / "ae")  # an autoencoder folder on its own
    assert ae.ae_decode(ae.ae_encode(E["ids"])[0]).tolist() == E["ae"]["decoded_ids"]


def test_brierlm_of_the_cli(calm):
    ids = [int(t) for t in (CLI_DATA / "calm_ids.txt").read_text().strip().split(",")]
    r = calm.brierlm(ids, block_size=24, seed=1234)
    assert (r["blocks"], r["block_size"], r["tokens"], r["seed"]) == (1, 24, 24, 1234)
    b = E["brier"]
    for n in range(1, 5):
        assert abs(r[f"brier{n}"] - b[f"brier{n}"]) <= E["tolerances"]["brier"]
    assert abs(r["brierlm"] - b["brierlm"]) < 1e-4


def test_calm_has_no_logits(muninn, calm):
    with pytest.raises(muninn.UsageError, match="no next-token logits"):
        calm.score([[1, 2, 3, 4]])


def test_forward_is_the_backbones_hidden_states_with_its_taps(calm):
    # CALM's forward returns the normalised hidden state of each chunk (the energy head's input);
    # the taps are the reference's compressor output and the same hidden states.
    tol = E["tolerances"]["float"]
    d = E["config"]["hidden_size"]
    assert set(calm.taps) == {"embeddings", "prelude.layer.0", "prelude.layer.1", "head.input", "logits"}
    r = calm.forward(E["ids"], taps=["embeddings", "head.input"])
    assert r["logits"].shape == (len(E["ids"]) // 4, d) and r["head.input"].shape == r["logits"].shape
    np.testing.assert_allclose(r["logits"].ravel(), E["hidden"], rtol=0, atol=tol)
    np.testing.assert_allclose(r["embeddings"].ravel(), E["embed_proj"], rtol=0, atol=tol)
    np.testing.assert_array_equal(calm.forward(E["ids"]), r["logits"])
