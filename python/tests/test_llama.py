"""Llama: every shipped fixture's logits and greedy ids (our transformers references, max |diff|
<= 1e-4 as in expected.json and the CLI's golden tests), text, chat template, eos."""
import numpy as np
import pytest

from conftest import DATA, read_json

FIXTURES = ["tiny_tied_mha", "tiny_untied_gqa", "tiny_linear_bias", "tiny_text", "tiny_bf16_sharded",
            "tiny_bf16_sharded_v4"]


@pytest.mark.parametrize("name", FIXTURES)
def test_forward_and_greedy_match_transformers(muninn, name):
    folder = DATA / "llama" / name
    e = read_json(folder / "expected.json")
    m = muninn.load(folder)
    logits = m.forward(e["prompt_ids"])
    np.testing.assert_allclose(logits, np.load(folder / "logits.npy"), rtol=0, atol=1e-4)
    last = m.forward(e["long"]["prompt_ids"])[-1]
    np.testing.assert_allclose(last, np.array(e["long"]["last_logits"], np.float32), rtol=0, atol=1e-4)
    out = m.generate(e["prompt_ids"], max_new_tokens=e["greedy"]["max_new_tokens"], ignore_eos=True)
    assert out.ids.tolist() == e["greedy"]["ids"]


def test_text_prompt_gets_bos_and_decodes(llama):
    e = read_json(DATA / "llama" / "tiny_text" / "expected.json")
    out = llama.generate("The cat sat", max_new_tokens=12)
    assert out.ids.tolist() == e["greedy"]["ids"]  # the CLI's llama_generate_text
    assert out.text == e["greedy"]["text"]
    assert llama.tokenizer.encode("The cat sat", add_special_tokens=True) == e["prompt_ids"]
    assert llama.tokenizer.encode("The cat sat") == e["prompt_ids_no_bos"]
    assert llama.tokenizer.decode(e["greedy"]["ids"]) == e["greedy"]["text"]
    np.testing.assert_allclose(llama.forward("The cat sat"), llama.forward(e["prompt_ids"]), rtol=0, atol=0)


def test_chat_template(llama):
    c = read_json(DATA / "llama" / "tiny_text" / "expected.json")["chat"]
    assert llama.apply_chat_template(c["messages"], tokenize=False) == c["text"]
    assert llama.apply_chat_template(c["messages"]) == c["ids"]


def test_eos_ends_generation(llama):
    eos = llama.eos_ids.tolist()
    assert eos  # tiny_text's generation_config.json lists them
    e = read_json(DATA / "llama" / "tiny_text" / "expected.json")
    first = e["greedy"]["ids"][0]
    out = llama.generate(e["prompt_ids"], max_new_tokens=12, stop=[first])
    assert out.ids.tolist() == [first] and out.stop_reason == "stop"


def test_info(llama):
    i = llama.info()
    assert i["family"] == "llama" and i["vocab_size"] == 736 and i["parameters"] == 108864
    assert i["fields"]["block"] == "pre_norm"
    assert llama.family == "llama" and llama.vocab_size == 736 and llama.context == i["context"]
    assert "llama" in repr(llama)


def test_q8_activations(muninn):
    # q8 weights, one-token decode (a one-token forward: every projection a one-row GEMM). Oracle for
    # q8_activations="fp32": kernels="batch-invariant", whose one-row GEMM keeps the activations fp32
    # by another kernel (the two differ by rounding, below 3e-6 here); int8 rounds each activation by
    # up to half a step of its block's amax/127, which moves this fixture's logits by 0.07 or more.
    # The default is int8, bit for bit. (tests/test_frontend_options.cpp checks both settings
    # against the library's model built with host_backend::q8_int8_activations each way.)
    folder = DATA / "llama" / "tiny_tied_mha"
    runs = {
        "int8": muninn.load(folder, quantize="q8", q8_activations="int8"),
        "fp32": muninn.load(folder, quantize="q8", q8_activations="fp32"),
        "default": muninn.load(folder, quantize="q8"),
        "invariant": muninn.load(folder, quantize="q8", kernels="batch-invariant"),
    }
    for token in (19, 65, 102):
        got = {k: m.forward([token]) for k, m in runs.items()}
        np.testing.assert_allclose(got["fp32"], got["invariant"], rtol=0, atol=1e-4)
        assert np.abs(got["int8"] - got["invariant"]).max() > 1e-3, "int8 gave the fp32-activation logits"
        np.testing.assert_array_equal(got["default"], got["int8"])
