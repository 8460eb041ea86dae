"""stream=True yields the tokens of the same generation, one by one, from a worker thread; the
model stays busy until the stream ends; Ctrl-C stops a generation between tokens."""
import _thread
import signal
import threading
import time

import numpy as np
import pytest

from conftest import DATA

CASES = [
    ("huginn", [117, 4, 44, 64, 100], dict(max_new_tokens=8, steps=4, init_state="zero")),
    ("huginn", [117, 4, 44, 64, 100], dict(max_new_tokens=8, steps=8, exit="kl", temperature=0.8, seed=3)),
    ("llama", "The cat sat", dict(max_new_tokens=12)),
    ("llama", [700, 553], dict(max_new_tokens=20, temperature=0.9, top_k=40, top_p=0.9, seed=11)),
    ("mor", [18, 43, 2, 11, 45], dict(max_new_tokens=6)),
    ("calm", [12, 50, 30, 27, 29], dict(max_new_tokens=16, seed=7)),
]


@pytest.mark.parametrize("family,prompt,opts", CASES)
def test_streaming_yields_the_tokens_of_the_generation(request, family, prompt, opts):
    m = request.getfixturevalue(family)
    whole = m.generate(prompt, **opts)
    stream = m.generate(prompt, stream=True, **opts)
    assert stream.result is None
    tokens = list(stream)
    assert tokens == whole.ids.tolist() and all(isinstance(t, int) for t in tokens)
    assert stream.result.ids.tolist() == tokens and stream.result.stop_reason == whole.stop_reason
    assert stream.result.text == whole.text
    assert list(stream) == []  # exhausted


def test_model_is_busy_while_a_stream_is_open(muninn, huginn):
    s = huginn.generate([1, 2, 3], max_new_tokens=40, steps=16, stream=True)
    first = next(s)
    with pytest.raises(muninn.UsageError, match="stream of this model is still running"):
        huginn.forward([1, 2])
    s.close()
    assert s.result.stop_reason in ("cancelled", "length")
    assert s.result.ids[0] == first
    huginn.forward([1, 2])  # free again


def test_abandoned_stream_frees_the_model(muninn):
    m = muninn.load(DATA / "huginn" / "tiny_f32")
    s = m.generate([1, 2, 3], max_new_tokens=30, stream=True)
    del s
    m.forward([1, 2])
    with m.generate([1, 2, 3], max_new_tokens=30, stream=True) as s2:
        next(s2)
    m.forward([1, 2])
    s3 = m.generate([1, 2, 3], max_new_tokens=60, steps=64, stream=True)
    m.close()  # cancels the running stream
    assert m.closed
    assert len(list(s3)) <= 60


def test_stream_error_is_raised_by_iteration(muninn, huginn):
    s = huginn.generate([1, 2, 3], max_new_tokens=2, sampler="parallel", max_wavefront=2, headway=2, stream=True)
    with pytest.raises(muninn.Error, match="max_wavefront 2 must exceed headway 2"):
        list(s)
    huginn.forward([1])


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """interrupt_main() does nothing while SIGINT is ignored, as it is for a job a non-interactive
    shell starts in the background: Python's own handler for these tests."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_after(seconds):
    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.start()
    return timer


def test_keyboard_interrupt_stops_a_generation(muninn):
    m = muninn.load(DATA / "huginn" / "tiny_f32")
    t0 = time.monotonic()
    full = m.generate([1, 2, 3], max_new_tokens=60, steps=1024, init_state="zero")
    took = time.monotonic() - t0
    timer = _interrupt_after(min(0.05, took / 4))
    with pytest.raises(KeyboardInterrupt):
        m.generate([1, 2, 3], max_new_tokens=60, steps=1024, init_state="zero")
        time.sleep(5)  # not reached unless the interrupt came late: it must land in the sleep
    timer.join()
    again = m.generate([1, 2, 3], max_new_tokens=60, steps=1024, init_state="zero")
    assert np.array_equal(again.ids, full.ids)


def test_keyboard_interrupt_stops_a_stream(muninn):
    m = muninn.load(DATA / "huginn" / "tiny_f32")
    seen = []
    timer = _interrupt_after(0.05)
    with pytest.raises(KeyboardInterrupt):
        for t in m.generate([1, 2, 3], max_new_tokens=60, steps=1024, stream=True):
            seen.append(t)
        time.sleep(5)
    timer.join()
    m.close()  # waits for the cancelled worker
    assert len(seen) <= 60
