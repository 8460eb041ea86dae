"""Two Python threads running two models at once give what each gives alone; two threads sharing
one model take turns."""
import threading

import numpy as np

from conftest import DATA


def _run(m, prompt, out, key):
    out[key] = (m.generate(prompt, max_new_tokens=30, temperature=0.8, seed=5).ids.tolist(),
                m.forward(prompt))


def test_two_models_in_two_threads_match_sequential(muninn):
    a = muninn.load(DATA / "huginn" / "tiny_f32")
    b = muninn.load(DATA / "llama" / "tiny_text")
    pa, pb = [117, 4, 44, 64, 100], [700, 553, 68, 220]
    seq = {}
    _run(a, pa, seq, "a")
    _run(b, pb, seq, "b")
    for _ in range(3):
        par = {}
        threads = [threading.Thread(target=_run, args=(a, pa, par, "a")),
                   threading.Thread(target=_run, args=(b, pb, par, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k in "ab":
            assert par[k][0] == seq[k][0]
            np.testing.assert_array_equal(par[k][1], seq[k][1])


def test_threads_sharing_one_model_take_turns(muninn):
    m = muninn.load(DATA / "huginn" / "tiny_f32")
    want = m.forward([5, 6, 7], steps=8, init_state="zero")
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(m.forward([5, 6, 7], steps=8, init_state="zero"))
        except Exception as e:  # pragma: no cover - the assertion below reports it
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 20
    for r in results:
        np.testing.assert_array_equal(r, want)
