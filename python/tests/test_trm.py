"""TRM / HRM: solve gives the reference's steps, predictions and accuracies (the CLI's solve tests
and expected.json), from a dataset folder or from arrays."""
import numpy as np
import pytest

from conftest import DATA, read_json

E = read_json(DATA / "trm" / "trm_mlpt_f32" / "expected.json")
SUDOKU = DATA / "trm" / "data" / "sudoku4"


def test_fixed_halting(muninn, trm):
    r = muninn.solve(trm, SUDOKU, limit=4)
    assert r["halting"] == "fixed, 16 steps"
    assert r["puzzles"] == 4 and r["steps"].tolist() == E["fixed"]["steps"]
    assert r["exact_accuracy"] == 0 and abs(r["token_accuracy"] - 1 / 64) < 1e-12
    assert r["solved"].dtype == np.bool_ and not r["solved"].any()
    assert r["predictions"].shape == (4, 16) and r["predictions"].tolist() == E["preds"][-1]


def test_learned_halting(trm):
    r = trm.solve(SUDOKU, limit=4, halt="q", batch=3)
    assert r["halting"] == "q (q_halt > 0), at most 16 steps"
    assert r["steps"].tolist() == E["qhalt"]["steps"] and r["mean_steps"] == 7.5
    assert r["predictions"].tolist() == E["qhalt"]["preds"]
    assert abs(r["token_accuracy"] - 3 / 64) < 1e-12


def test_arrays_in(trm):
    b = E["batch"]
    r = trm.solve({"inputs": np.array(b["inputs"]), "labels": b["labels"]}, halt="q")
    assert r["steps"].tolist() == E["qhalt"]["steps"]
    assert r["solved"].tolist() == E["qhalt"]["exact"]
    unlabelled = trm.solve({"inputs": b["inputs"], "puzzle_identifiers": b["puzzle_identifiers"]}, max_steps=2)
    assert "exact_accuracy" not in unlabelled and unlabelled["steps"].tolist() == [2, 2, 2, 2]


def test_attention_variant_from_a_step_file(muninn):
    m = muninn.load(DATA / "trm" / "trm_att_f32" / "step_51020")
    r = m.solve(DATA / "trm" / "data" / "arc4" / "test", limit=2, halt="q")
    assert r["puzzles"] == 2 and r["mean_steps"] == 7.0 and r["token_accuracy"] == 0


def test_solve_errors(muninn, trm, llama):
    with pytest.raises(muninn.ConfigError, match="vocab_size 12 exceeds the model's vocabulary of 6 tokens"):
        trm.solve(DATA / "trm" / "data" / "arc4")
    with pytest.raises(muninn.UsageError, match="^halt must be fixed|q, got 'auto'"):
        trm.solve(SUDOKU, halt="auto")
    with pytest.raises(muninn.UsageError, match="halt_threshold needs halt q"):
        trm.solve(SUDOKU, halt_threshold=0.5)
    with pytest.raises(muninn.UsageError, match="outside the vocabulary"):
        trm.solve({"inputs": [[7] * 16]})
    with pytest.raises(muninn.UsageError, match="a Llama checkpoint: muninn solve runs TRM"):
        llama.solve(SUDOKU)
    with pytest.raises(muninn.UsageError, match="a TRM / HRM run folder"):
        trm.forward([1])


def test_weights_stored_in_q8(muninn):
    # The layers' projections and the output matrix in q8: info says so, and solve still gives
    # the fixture's fixed-halting steps (its predictions may move by q8 rounding).
    m = muninn.load(DATA / "trm" / "trm_mlpt_f32", quantize="q8")
    assert m.info()["fields"]["weights"].startswith("q8 projections and output matrix")
    r = m.solve(SUDOKU, limit=4)
    assert r["steps"].tolist() == E["fixed"]["steps"] and r["predictions"].shape == (4, 16)
