"""Huginn: the shipped fixtures give the logits and greedy tokens of our PyTorch reference (the
tolerance each fixture's inputs.json states, as the CLI's golden tests use), and the taps."""
import numpy as np
import pytest

from conftest import DATA, read_json

FIXTURES = ["tiny_f32", "tiny_f16", "tiny_bf16_sharded", "tiny_add", "tiny_prenorm_gqa"]


@pytest.mark.parametrize("name", FIXTURES)
def test_forward_matches_the_reference_at_every_depth(muninn, name):
    folder = DATA / "huginn" / name
    spec = read_json(folder / "inputs.json")
    m = muninn.load(folder)
    for r in spec["steps"]:
        logits = m.forward(spec["tokens"], steps=r, init_state="zero")
        want = np.load(folder / spec["logits_files"][str(r)])
        assert logits.dtype == np.float32 and logits.shape == want.shape
        np.testing.assert_allclose(logits, want, rtol=0, atol=spec["atol"])


@pytest.mark.parametrize("name", FIXTURES)
def test_greedy_generation_matches_the_reference(muninn, name):
    folder = DATA / "huginn" / name
    g = read_json(folder / "inputs.json")["generate"]
    m = muninn.load(folder)
    out = m.generate(g["prompt"], max_new_tokens=g["max_new_tokens"], steps=g["steps"], init_state="zero", greedy=True)
    assert out.ids.tolist() == g["expected"]
    assert out.stop_reason == "length"
    assert out.text is None  # no tokenizer.json
    assert out.steps.tolist() == [g["steps"]] * g["max_new_tokens"]


def test_text_in_text_out(muninn):
    folder = DATA / "huginn" / "tiny_text"
    spec = read_json(folder / "text.json")
    m = muninn.load(folder)
    for p in spec["prompts"]:
        assert m.tokenizer.encode(p["text"]) == p["ids"]
        out = m.generate(p["text"], max_new_tokens=spec["max_new_tokens"], steps=spec["steps"], init_state="zero")
        assert out.ids.tolist() == p["expected"]
        assert out.text == p["expected_text"]


def test_trajectory_tap_holds_every_step_and_ends_at_the_latents(huginn):
    spec = read_json(DATA / "huginn" / "tiny_f32" / "inputs.json")
    out = huginn.forward(spec["tokens"], steps=4, init_state="zero", taps=["trajectory", "latents"])
    traj, lat = out["trajectory"], out["latents"]
    T = len(spec["tokens"])
    assert traj.shape == (T, 4, 64) and traj.dtype == np.float32
    assert np.isfinite(traj).all()
    # The last step's state is the latent the coda reads: the reference's latents_r4.npy.
    np.testing.assert_allclose(traj[:, -1, :], lat, rtol=0, atol=0)
    np.testing.assert_allclose(lat, np.load(DATA / "huginn" / "tiny_f32" / "latents_r4.npy"), rtol=0, atol=1e-4)
    np.testing.assert_array_equal(out["logits"], huginn.forward(spec["tokens"], steps=4, init_state="zero"))
    assert set(huginn.taps) == {"trajectory", "latents"}


def test_random_initial_state_follows_the_seed(huginn):
    ids = [1, 2, 3, 4]
    a = huginn.forward(ids, seed=1)
    assert np.array_equal(a, huginn.forward(ids, seed=1))
    assert not np.array_equal(a, huginn.forward(ids, seed=2))


def test_early_exit_runs_fewer_steps(huginn):
    out = huginn.generate([117, 4, 44, 64, 100], max_new_tokens=8, steps=32, exit="kl", exit_threshold=1e-3,
                          init_state="zero")
    assert len(out.ids) == 8
    assert out.steps.min() >= 1 and out.steps.max() <= 32
