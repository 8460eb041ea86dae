"""Arguments of the wrong type or shape: a clear Python exception, never a crash."""
import numpy as np
import pytest

from conftest import DATA


def test_ids_of_every_integer_type_and_layout(huginn):
    ids = [25, 63, 80, 91, 81, 55]
    want = huginn.forward(ids, steps=2, init_state="zero")
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64):
        got = huginn.forward(np.array(ids, dtype=dtype), steps=2, init_state="zero")
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(huginn.forward(tuple(ids), steps=2, init_state="zero"), want)
    np.testing.assert_array_equal(huginn.forward([np.int64(i) for i in ids], steps=2, init_state="zero"), want)
    # A non-contiguous view is read through its strides, not rejected and not misread.
    strided = np.array([[i, -1] for i in ids], dtype=np.int64)[:, 0]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(huginn.forward(strided, steps=2, init_state="zero"), want)
    reversed_view = np.array(ids[::-1], dtype=np.int32)[::-1]
    np.testing.assert_array_equal(huginn.forward(reversed_view, steps=2, init_state="zero"), want)


@pytest.mark.parametrize("bad,error,pattern", [
    ([1.0, 2.0], TypeError, r"ids must hold integer token ids, got float at index 0"),
    (np.array([1.0, 2.0]), TypeError, r"ids must hold integer token ids, got an array of float64"),
    (np.array([True, False]), TypeError, r"got an array of bool$"),
    ([True, 1], TypeError, r"got bool at index 0"),
    (["a", "b"], "UsageError", r"^ids\[0\] needs a tokenizer: .*tokenizer.json does not exist \(give token ids\)$"),
    (3, TypeError, r"ids must be token ids \(a list of ints or an integer array\), got int"),
    (None, TypeError, r"got NoneType"),
    ({1: 2}, TypeError, r"got dict"),
    (np.zeros((2, 2, 2), np.int64), "UsageError", r"^ids is a 3-D array: give one sequence"),
    ([[[1]]], "UsageError", r"^ids is a list nested three deep"),
    (np.int64(3), TypeError, r"ids is a 0-d array|got"),
    ([], "UsageError", r"^the input is empty$"),
    ([-1, 2], "UsageError", r"^the input: token id -1 at index 0 is out of range for vocab_size 128$"),
    ([1, 128], "UsageError", r"token id 128 at index 1 is out of range"),
    ([2 ** 40], "UsageError", r"^ids: token id 1099511627776 at index 0 does not fit in 32 bits$"),
    ([2 ** 80], "UsageError", r"does not fit in 32 bits"),
    (np.array([2 ** 63 + 5], np.uint64), "UsageError", r"does not fit in 32 bits"),
])
def test_bad_ids(muninn, huginn, bad, error, pattern):
    error = getattr(muninn, error) if isinstance(error, str) else error
    with pytest.raises(error, match=pattern):
        huginn.forward(bad)


def test_unknown_and_misplaced_keywords_are_type_errors(huginn):
    with pytest.raises(TypeError, match=r"^generate\(\) got an unexpected keyword argument 'max_tokens'$"):
        huginn.generate([1], max_tokens=3)
    with pytest.raises(TypeError, match=r"^forward\(\) got an unexpected keyword argument 'output'$"):
        huginn.forward([1], output="x.npy")  # the CLI's own output option
    with pytest.raises(TypeError, match=r"^forward\(\) got an unexpected keyword argument 'device'$"):
        huginn.forward([1], device="cpu")  # a load option
    with pytest.raises(TypeError, match=r"^generate\(\) missing required keyword argument 'max_new_tokens'$"):
        huginn.generate([1])
    with pytest.raises(TypeError, match=r"^load\(\) got an unexpected keyword argument 'stepz'$"):
        __import__("muninn").load(DATA / "huginn" / "tiny_f32", stepz=3)


@pytest.mark.parametrize("kwargs,pattern", [
    (dict(steps="4"), r"^steps must be an int, got str$"),
    (dict(steps=4.0), r"^steps must be an int, got float$"),
    (dict(steps=True), r"^steps must be an int, got bool$"),
    (dict(greedy=1), r"^greedy must be True or False, got int$"),
    (dict(temperature="hot"), r"^temperature must be a number, got str$"),
    (dict(exit=3), r"^exit must be one of none\|kl"),
    (dict(stop="5"), r"^stop must be a token id or a list of them, got str$"),
    (dict(stop=[1.5]), r"^stop must hold integer token ids, got float at index 0$"),
])
def test_option_values_of_the_wrong_type(huginn, kwargs, pattern):
    with pytest.raises(TypeError, match=pattern):
        huginn.generate([1, 2], max_new_tokens=2, **kwargs)


def test_option_values_out_of_range_are_usage_errors(muninn, huginn):
    with pytest.raises(muninn.UsageError, match=r"^temperature must be a number in \[0, 1000000\], got 'nan'$"):
        huginn.generate([1, 2], max_new_tokens=2, temperature=float("nan"))
    with pytest.raises(ValueError):  # UsageError is a ValueError too
        huginn.generate([1, 2], max_new_tokens=-1)
    # None leaves an option at its default; False leaves a switch off.
    a = huginn.generate([1, 2], max_new_tokens=3, steps=None, greedy=False, init_state="zero")
    b = huginn.generate([1, 2], max_new_tokens=3, init_state="zero")
    assert a.ids.tolist() == b.ids.tolist()


def test_use_after_close(muninn):
    m = muninn.load(DATA / "huginn" / "tiny_f32")
    tok_model = muninn.load(DATA / "llama" / "tiny_text")
    tok = tok_model.tokenizer
    assert not m.closed
    m.close()
    m.close()  # twice is fine
    assert m.closed and "closed" in repr(m)
    for call in (lambda: m.forward([1]), lambda: m.generate([1], max_new_tokens=1), lambda: m.info(),
                 lambda: m.score([[1, 2]]), lambda: m.vocab_size):
        with pytest.raises(muninn.UsageError, match="is closed"):
            call()
    tok_model.close()
    with pytest.raises(muninn.UsageError, match="is closed"):
        tok.encode("hi")
    with muninn.load(DATA / "huginn" / "tiny_f32") as w:
        w.forward([1])
    assert w.closed


def test_padded_batch_and_mask(muninn, huginn):
    a, b = [5, 6, 7, 8], [9, 10]
    single_a = huginn.forward(a, steps=2, init_state="zero")
    single_b = huginn.forward(b, steps=2, init_state="zero")
    ids = np.array([a, [0, 0] + b])  # b left-padded
    mask = np.array([[1, 1, 1, 1], [0, 0, 1, 1]])
    out = huginn.forward(ids, attention_mask=mask, steps=2, init_state="zero")
    assert out.shape == (2, 4, 128)
    np.testing.assert_allclose(out[0], single_a, rtol=0, atol=1e-5)
    np.testing.assert_allclose(out[1, 2:], single_b, rtol=0, atol=1e-5)
    assert not out[1, :2].any()
    right = huginn.forward([b + [0, 0]], attention_mask=[[True, True, False, False]], steps=2, init_state="zero")
    np.testing.assert_allclose(right[0, :2], single_b, rtol=0, atol=1e-5)
    ragged = huginn.forward([a, b], steps=2, init_state="zero")
    assert [r.shape for r in ragged] == [(4, 128), (2, 128)]
    np.testing.assert_allclose(ragged[1], single_b, rtol=0, atol=1e-5)
    with pytest.raises(muninn.UsageError, match=r"attention_mask\[1\]: the 1s must be one run"):
        huginn.forward(ids, attention_mask=[[1, 1, 1, 1], [1, 0, 1, 1]])
    with pytest.raises(muninn.UsageError, match=r"attention_mask\[0\] masks every position"):
        huginn.forward(ids, attention_mask=[[0, 0, 0, 0], [1, 1, 1, 1]])
    with pytest.raises(muninn.UsageError, match=r"attention_mask has shape \[1, 4\] but ids \[2, 4\]"):
        huginn.forward(ids, attention_mask=[[1, 1, 1, 1]])
    with pytest.raises(muninn.UsageError, match=r"attention_mask\[0\]\[0\] is 2"):
        huginn.forward(ids, attention_mask=[[2, 1, 1, 1], [1, 1, 1, 1]])
    with pytest.raises(muninn.UsageError, match="attention_mask goes with a padded batch"):
        huginn.forward(a, attention_mask=[1, 1, 1, 1])


def test_unknown_tap(muninn, huginn, llama):
    with pytest.raises(muninn.UsageError, match=r"^unknown tap 'hidden': Huginn checkpoints offer trajectory, latents$"):
        huginn.forward([1], taps=["hidden"])
    with pytest.raises(muninn.UsageError, match=r"^unknown tap 'trajectory': Llama checkpoints offer no taps$"):
        llama.forward([1], taps=["trajectory"])
