"""Every bad-input case the CLI's tests check, from Python: the same message with the option
spelled as a keyword argument, raised as the muninn.Error subclass of its kind."""
import re

import pytest

from conftest import CLI_DATA, DATA

TINY = DATA / "huginn" / "tiny_f32"
CALM = DATA / "calm"
TRM = DATA / "trm"


def raises(muninn, kind, pattern):
    return pytest.raises(getattr(muninn, kind), match=pattern)


# (name, kind, message regex, keyword arguments of huginn.generate([1, 2, 3], max_new_tokens=2, ...))
GENERATE_CASES = [
    ("exit_threshold_negative", "UsageError", r"^exit_threshold must be a number >= 0, got '-0.5'$",
     dict(exit="kl", exit_threshold=-0.5)),
    ("min_steps_over_max", "UsageError", r"^min_steps 5 exceeds max_steps 3$", dict(exit="kl", min_steps=5, max_steps=3)),
    ("min_steps_over_steps", "UsageError", r"^min_steps 5 exceeds max_steps 4 \(its default, the steps depth\)$",
     dict(exit="kl", steps=4, min_steps=5)),
    ("stop_out_of_vocab", "UsageError", r"^stop: token id 128 is out of range for vocab_size 128$", dict(stop=[5, 128])),
    ("lookahead_zero", "UsageError", r"^lookahead must be an integer in 1\.\.1024, got '0'$",
     dict(draft_steps=2, lookahead=0)),
    ("draft_sampled", "UsageError", r"^draft_steps verifies by argmax", dict(draft_steps=2, temperature=0.7)),
    ("draft_warm", "UsageError", r"^draft_steps does not combine with warm_start", dict(draft_steps=2, warm_start="raw")),
    ("top_k_negative", "UsageError", r"^top_k must be an integer in 0\.\.2147483647, got '-1'$", dict(top_k=-1)),
    ("top_p_zero", "UsageError", r"^top_p must be in \(0, 1\], got 0", dict(top_p=0)),
    ("check_every_zero", "UsageError", r"^check_every must be an integer in 1\.\.1024, got '0'$", dict(check_every=0)),
    ("bad_exit", "UsageError", r"^exit must be none\|kl\|entropy-diff\|latent-diff\|argmax-stable\|cosine, got 'fast'$",
     dict(exit="fast")),
    ("parallel_flag_without_sampler", "UsageError", r"^headway needs sampler parallel$", dict(headway=2)),
    ("parallel_bad_sampler", "UsageError", r"^sampler must be plain\|parallel\|approx\|exact, got 'fast'$",
     dict(sampler="fast")),
    ("parallel_wavefront_headway", "Error", r"max_wavefront 2 must exceed headway 2",
     dict(sampler="parallel", max_wavefront=2, headway=2)),
    ("parallel_with_exit", "UsageError", r"^exit does not apply to sampler parallel$", dict(sampler="parallel", exit="kl")),
    ("parallel_cache_lookup", "UsageError",
     r"^cache_lookup latest-m4-compress-s3: 3 slots is not a whole number of recurrences of the 2-layer core$",
     dict(sampler="parallel", cache_lookup="latest-m4-compress-s3")),
    ("parallel_bad_freeze", "UsageError", r"^freeze must be latent-diff\|fixed\|token-stability, got 'latent-acceleration-1'$",
     dict(sampler="parallel", freeze="latent-acceleration-1")),
    ("prefill_exit_without_exit", "UsageError", r"^prefill_exit needs an exit criterion$", dict(prefill_exit="prompt")),
    ("bad_exit_parity", "UsageError", r"^exit_parity must be muninn\|reference, got 'hf'$",
     dict(exit="kl", exit_parity="hf")),
    ("min_steps_without_exit", "UsageError", r"^min_steps needs an exit criterion$", dict(min_steps=1)),
    ("steps_huge", "UsageError", r"^steps must be an integer in 0\.\.1024, got '100000000'$", dict(steps=100000000)),
    ("max_new_tokens_huge", "UsageError",
     r"^max_new_tokens must be an integer in 0\.\.1048576, got '99999999999999999999'$",
     dict(max_new_tokens=99999999999999999999)),
    ("huginn_calm_sampler", "UsageError", r"^sampler exact applies to CALM checkpoints", dict(sampler="exact")),
    ("huginn_calm_flags", "UsageError",
     r"^num_samples applies to CALM checkpoints; this is a recurrent-depth transformer \(Huginn-0125 / Raven\)$",
     dict(num_samples=5)),
    ("past_block_size", "UsageError",
     r"^the prompt of 3 tokens \+ 62 new tokens = 65 exceeds the model's context \(block_size 64\)$",
     dict(max_new_tokens=62, init_state="zero")),
]


@pytest.mark.parametrize("name,kind,pattern,kwargs", GENERATE_CASES, ids=[c[0] for c in GENERATE_CASES])
def test_generate_options(muninn, huginn, name, kind, pattern, kwargs):
    args = dict(max_new_tokens=2)
    args.update(kwargs)
    with raises(muninn, kind, pattern):
        huginn.generate([1, 2, 3], **args)


def test_forward_errors(muninn, huginn, mor):
    with raises(muninn, "UsageError", r"^the input: token id 128 at index 1 is out of range for vocab_size 128$"):
        huginn.forward([1, 128])
    with raises(muninn, "UsageError", r"^init_state must be zero\|random, got 'warm'$"):
        huginn.forward([1], init_state="warm")
    with raises(muninn, "UsageError", r"^steps applies to Huginn checkpoints; this is a routed-depth transformer"):
        mor.forward([1, 2], steps=3)
    with raises(muninn, "UsageError", r"^routing applies to Mixture-of-Recursions checkpoints; this is a recurrent-depth"):
        huginn.forward([1, 2], routing="scoring")
    with raises(muninn, "UsageError", r"^exit applies to Huginn checkpoints; this is a routed-depth transformer"):
        mor.generate([1, 2], max_new_tokens=2, exit="kl")


def test_load_errors(muninn):
    with raises(muninn, "UsageError", r"^path: '/nonexistent/m' does not exist$"):
        muninn.load("/nonexistent/m")
    with raises(muninn, "ConfigError",
                r"config.json: model_type 'mistral' \(architectures MistralForCausalLM\) is not supported"):
        muninn.load(CLI_DATA / "mistral")
    with raises(muninn, "UsageError", r"tiny_f32/config.json' is a file; give the model's folder"):
        muninn.load(TINY / "config.json")
    with raises(muninn, "UsageError", r"^dtype bf16 and quantize q8 both choose how the weights are stored; give one$"):
        muninn.load(TINY, dtype="bfloat16", quantize="q8")
    with raises(muninn, "UsageError", r"^quantize must be none\|q8, got 'q4'$"):
        muninn.load(TINY, quantize="q4")
    with raises(muninn, "UsageError", r"^q8_activations must be int8\|fp32, got 'int4'$"):
        muninn.load(TINY, quantize="q8", q8_activations="int4")
    with raises(muninn, "UsageError",
                r"^q8_activations chooses what q8 decode does with its activations; it needs quantize q8 \(on the cpu\)$"):
        muninn.load(TINY, q8_activations="fp32")
    with raises(muninn, "UsageError", r"^q8_activations int8 does not combine with kernels batch-invariant, whose one-row "
                r"GEMM keeps fp32 activations.*; give kernels fastest or q8_activations fp32$"):
        muninn.load(TINY, quantize="q8", q8_activations="int8", kernels="batch-invariant")
    with raises(muninn, "UsageError", r"^q8_activations applies to .*checkpoints; this is .*TRM"):
        muninn.load(TRM / "trm_mlpt_f32", quantize="q8", q8_activations="fp32")
    with raises(muninn, "UsageError", r"^device must be cpu\|cuda, got 'tpu'$"):
        muninn.load(TINY, device="tpu")
    with raises(muninn, "UsageError", r"^dtype must be float32 or bfloat16, got 'int8'$"):
        muninn.load(TINY, dtype="int8")
    with raises(muninn, "CheckpointError", r"CALM's config.json does not describe its autoencoder"):
        muninn.load(CALM / "calm")
    with raises(muninn, "UsageError", r"^ae applies to CALM checkpoints"):
        muninn.load(TINY, ae=str(CALM / "ae"))


def test_cuda_is_a_clear_error_without_it(muninn):
    if muninn.has_cuda:
        try:
            muninn.load(TINY, device="cuda")
        except muninn.UsageError as e:
            assert re.match(r"^no CUDA device: ", str(e))
    else:
        with raises(muninn, "UsageError", r"^this muninn was built without CUDA"):
            muninn.load(TINY, device="cuda")


def test_calm_errors(muninn, calm):
    with raises(muninn, "UsageError", r"^chunk batch sampling: temperature must be 1/n for an integer n, got T = 0.4"):
        calm.generate([1, 2], max_new_tokens=4, temperature=0.4)
    with raises(muninn, "UsageError", r"^chunk exact sampling: temperature must be in \(0, 1\], got T = 1.5"):
        calm.generate([1, 2], max_new_tokens=4, temperature=1.5, sampler="exact")
    with raises(muninn, "UsageError", r"^exit applies to Huginn checkpoints; this is a continuous autoregressive model"):
        calm.generate([1, 2], max_new_tokens=4, exit="kl", steps=3)
    with raises(muninn, "UsageError", r"^block_size 22 is not a multiple of the chunk size 4$"):
        calm.brierlm(list(range(24)), block_size=22)
    with raises(muninn, "UsageError", r"^a CALM checkpoint has no next-token logits"):
        calm.score([[1, 2, 3]])
    with raises(muninn, "UsageError", r"token id 70 at index 1 is out of range for vocab_size 64"):
        calm.ae_encode([1, 70])
    with raises(muninn, "UsageError", r"latent size is 8"):
        calm.ae_decode([[0.0] * 5])


def test_eval_errors(muninn, llama, huginn, mor):
    stream = list(range(100)) + [600, 700] * 27
    with raises(muninn, "UsageError", r"^block_size 8192 \(the default\) exceeds the model's context of 128 positions"):
        llama.brierlm(stream)
    with raises(muninn, "UsageError", r"^block_size must be an integer in 5\.\.1073741824, got '4'$"):
        llama.brierlm(stream, block_size=4)
    with raises(muninn, "UsageError", r"^data holds 24 tokens, fewer than one block of block_size 48"):
        llama.brierlm(list(range(24)), block_size=48)
    with raises(muninn, "UsageError", r"^data: token id 718 \(token 1 of the stream\) is out of range for vocab_size 128"):
        huginn.brierlm([1, 718] + [1] * 40, block_size=20)
    with raises(muninn, "UsageError", r"^steps applies to Huginn checkpoints"):
        mor.brierlm(list(range(24)), block_size=12, steps=2)


def test_text_without_tokenizer_or_template(muninn, huginn):
    with raises(muninn, "UsageError", r"^prompt needs a tokenizer: .*tiny_f32/tokenizer.json does not exist"):
        huginn.generate("hello", max_new_tokens=2)
    with raises(muninn, "UsageError", r"^ids needs a tokenizer"):
        huginn.forward("hello")
    assert huginn.tokenizer is None
    text = muninn.load(DATA / "huginn" / "tiny_text")
    with raises(muninn, "UsageError", r"^messages needs a chat template: .*tiny_text has no chat_template.jinja and no "
                                      r"tokenizer_config.json$"):
        text.apply_chat_template([{"role": "user", "content": "hi"}])


def test_redirects_name_the_right_operation(muninn, trm):
    llama = muninn.load(DATA / "llama" / "tiny_tied_mha")
    with raises(muninn, "UsageError", r"^steps applies to Huginn checkpoints; this is a plain transformer"):
        llama.forward([1, 2, 3], steps=3)
    with raises(muninn, "UsageError", r"^a TRM / HRM run folder: use muninn solve"):
        trm.generate([1], max_new_tokens=1)
    with raises(muninn, "UsageError", r"ae_encode\(\) runs CALM models and autoencoders; this is a Llama checkpoint"):
        llama.ae_encode([1, 2, 3, 4])
