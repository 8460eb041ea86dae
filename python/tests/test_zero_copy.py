"""forward hands the engine's logits buffer to numpy: no copy (the array does not own its data,
its base is the nanobind array that owns the C++ vector, and the buffer lives as long as the array)."""
import gc

import numpy as np

from conftest import DATA


def test_forward_of_128_tokens_returns_the_engines_buffer(muninn):
    m = muninn.load(DATA / "llama" / "tiny_text")  # context 128
    ids = np.arange(128, dtype=np.int32) % m.vocab_size
    logits = m.forward(ids)
    assert logits.shape == (128, m.vocab_size) and logits.dtype == np.float32
    assert not logits.flags.owndata, "a copy owns its data"
    assert logits.flags.c_contiguous and logits.flags.writeable
    owner = logits.base
    if isinstance(owner, memoryview):  # nanobind >= 2.5 hands arrays to numpy through the buffer protocol
        owner = owner.obj
    assert owner is not None and type(owner).__name__ == "nb_ndarray"
    # The owner exports the very memory the array points at.
    assert np.from_dlpack(owner).__array_interface__["data"][0] == logits.__array_interface__["data"][0]
    want = logits.copy()
    del owner
    m.close()
    gc.collect()
    np.testing.assert_array_equal(logits, want)  # the buffer outlives the model and the call
