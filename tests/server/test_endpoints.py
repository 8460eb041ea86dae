"""The OpenAI endpoints through the official `openai` client: completions and chat, whole and
streamed, sampling, stop strings, and each family's extra fields echoed in usage."""

import json
import os

import openai
import pytest

from conftest import DATA, cli, model_dir

LLAMA = "llama/tiny_text"
HUGINN = "huginn/tiny_text"


def client(server, **kw):
    return openai.OpenAI(base_url=server.base + "/v1", api_key=kw.pop("api_key", "unused"), max_retries=0,
                         timeout=60, **kw)


def expected():
    with open(os.path.join(DATA, LLAMA, "expected.json")) as f:
        return json.load(f)


def test_health_and_models(module_server):
    s = module_server(LLAMA)
    models = client(s).models.list()
    assert [m.id for m in models.data] == ["tiny_text"]
    assert models.data[0].owned_by == "muninn"


def test_greedy_completion_is_transformers_greedy(module_server):
    # tiny_text/expected.json: transformers' greedy continuation of "The cat sat" (BOS added).
    want = expected()
    r = client(module_server(LLAMA)).completions.create(model="tiny_text", prompt="The cat sat", max_tokens=12,
                                                        temperature=0)
    assert r.object == "text_completion"
    assert r.choices[0].text == want["greedy"]["text"]
    assert r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens == len(want["prompt_ids"])
    assert r.usage.completion_tokens == 12
    assert r.usage.total_tokens == len(want["prompt_ids"]) + 12


def test_token_id_prompt_equals_text_prompt(module_server):
    want = expected()
    c = client(module_server(LLAMA))
    r = c.completions.create(model="tiny_text", prompt=want["prompt_ids"], max_tokens=12, temperature=0)
    assert r.choices[0].text == want["greedy"]["text"]


def test_stream_sends_one_chunk_per_token_and_the_same_text(module_server):
    c = client(module_server(LLAMA))
    whole = c.completions.create(model="m", prompt="The cat sat", max_tokens=12, temperature=0)
    chunks = list(c.completions.create(model="m", prompt="The cat sat", max_tokens=12, temperature=0, stream=True,
                                       stream_options={"include_usage": True}))
    token_chunks = [ch for ch in chunks if ch.choices and ch.choices[0].finish_reason is None]
    assert len(token_chunks) == 12
    assert "".join(ch.choices[0].text for ch in chunks if ch.choices) == whole.choices[0].text
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 12 and not chunks[-1].choices


def test_chat_uses_the_checkpoints_template(module_server):
    # The same chat through the CLI (its own generate path, not the batch engine) gives the same text.
    c = client(module_server(LLAMA))
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi there"}], max_tokens=10,
                                  temperature=0)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    out = cli("generate", "--model", model_dir(LLAMA), "--chat", "Hi there", "--max-new-tokens", "10", "--stream",
              "off")
    assert r.choices[0].message.content == out.splitlines()[0]
    streamed = list(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi there"}],
                                              max_tokens=10, temperature=0, stream=True))
    assert streamed[0].choices[0].delta.role == "assistant"
    assert "".join(ch.choices[0].delta.content or "" for ch in streamed) == r.choices[0].message.content
    assert streamed[-1].choices[0].finish_reason == r.choices[0].finish_reason


def test_seeded_sampling_repeats_and_the_seed_is_echoed(module_server):
    c = client(module_server(LLAMA))
    kw = dict(model="m", prompt="The cat sat", max_tokens=16, temperature=1.0, top_p=0.95)
    a = c.completions.create(seed=1234, **kw)
    b = c.completions.create(seed=1234, **kw)
    assert a.choices[0].text == b.choices[0].text
    assert a.usage.model_extra["seed"] == 1234
    others = {c.completions.create(seed=s, **kw).choices[0].text for s in range(5)}
    assert len(others) > 1  # sampling at T = 1 on a random model: seeds differ in what they draw
    unseeded = c.completions.create(**kw)
    assert isinstance(unseeded.usage.model_extra["seed"], int)  # a drawn seed, so the run can be repeated
    again = c.completions.create(seed=unseeded.usage.model_extra["seed"], **kw)
    assert again.choices[0].text == unseeded.choices[0].text


@pytest.mark.parametrize("stream", [False, True])
def test_stop_string_ends_the_text_before_it(module_server, stream):
    c = client(module_server(LLAMA))
    full = expected()["greedy"]["text"]  # "gitruas''Em1818ymbound14 o"
    stop = "Em18"
    r = c.completions.create(model="m", prompt="The cat sat", max_tokens=12, temperature=0, stop=[stop, "zzz"],
                             stream=stream)
    if stream:
        chunks = list(r)
        text = "".join(ch.choices[0].text for ch in chunks)
        reason = chunks[-1].choices[0].finish_reason
    else:
        text, reason = r.choices[0].text, r.choices[0].finish_reason
    assert text == full[: full.index(stop)]
    assert reason == "stop"


def test_huginn_extra_fields_are_echoed_with_the_steps_spent(module_server):
    c = client(module_server(HUGINN))
    r = c.completions.create(model="m", prompt="the", max_tokens=6, temperature=0,
                             extra_body={"steps": 5, "init_state": "zero"})
    u = r.usage.model_extra
    assert u["steps"] == 5 and u["init_state"] == "zero"
    assert u["recurrence_steps"] == 5 * r.usage.completion_tokens and u["mean_recurrence_steps"] == 5
    out = cli("generate", "--model", model_dir(HUGINN), "--prompt", "the", "--max-new-tokens", "6", "--steps", "5",
              "--init-state", "zero", "--stream", "off")
    assert r.choices[0].text == out.splitlines()[0]
    # With an exit criterion that always fires the tokens stop before the maximum depth.
    e = c.completions.create(model="m", prompt="the", max_tokens=6, temperature=0,
                             extra_body={"steps": 16, "exit": "latent-diff", "threshold": 1e9, "init_state": "zero"})
    eu = e.usage.model_extra
    assert eu["exit"] == "latent-diff" and eu["threshold"] == 1e9
    assert eu["mean_recurrence_steps"] < 16


def test_mixture_of_recursions_routing_and_depth(module_server):
    s = module_server("mor/expert_mcyc_r3_linear_sigmoid")
    r = client(s).completions.create(model="m", prompt=[5, 9, 2, 33], max_tokens=5, temperature=0,
                                     extra_body={"routing": "causal"})
    u = r.usage.model_extra
    assert u["routing"] == "causal"
    assert 1 <= u["mean_recursions"] <= 3
    out = cli("generate", "--model", model_dir("mor/expert_mcyc_r3_linear_sigmoid"), "--tokens", "5,9,2,33",
              "--max-new-tokens", "5")
    assert r.choices[0].text.split() == out.strip().splitlines()[-1].split(",")  # no tokenizer: the ids


def test_calm_temperature_is_the_likelihood_free_samplers(module_server):
    s = module_server("calm/calm", "--ae", model_dir("calm/ae"))
    c = client(s)
    r = c.completions.create(model="m", prompt=[5, 9, 2, 33], max_tokens=8, seed=3,
                             extra_body={"temperature": 0.5, "num_samples": 16})
    assert r.usage.model_extra["num_samples"] == 16
    assert r.usage.model_extra["head_samples"] >= 16
    out = cli("generate", "--model", model_dir("calm/calm"), "--ae", model_dir("calm/ae"), "--tokens", "5,9,2,33", "--max-new-tokens", "8",
              "--seed", "3", "--temperature", "0.5", "--num-samples", "16")
    assert r.choices[0].text.split() == out.strip().splitlines()[-1].split(",")


def test_a_field_of_another_family_is_a_400(module_server):
    c = client(module_server(LLAMA))
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model="m", prompt="x", max_tokens=2, extra_body={"steps": 4})
    assert "steps applies to Huginn checkpoints" in str(e.value)


@pytest.mark.parametrize("model,extra", [
    (LLAMA, {}),
    (HUGINN, {"steps": 12, "exit": "latent-diff", "threshold": 0.05, "init_state": "zero"}),
    ("mor/expert_mcyc_r3_linear_sigmoid", {"routing": "causal"}),
])
def test_concurrent_requests_get_what_they_get_alone(start_server, model, extra):
    # Requests sent at once share the batch (the server needs fewer scheduler steps for them than
    # one at a time); each answer, greedy or seeded sampling, equals the one the same request gets
    # on a server that runs it alone. Which requests share a step depends on arrival timing here:
    # it cannot matter, because the server's batch-invariant kernels (its default --kernels) sum
    # every row in the same order whatever the batch holds (docs/serving.md).
    from concurrent.futures import ThreadPoolExecutor
    prompts = [[5 + i, 9, 2 + 3 * i, 33, 7 * i % 60 + 1][: 2 + i % 4] for i in range(8)]
    bodies = [dict(model="m", prompt=p, max_tokens=30 + 4 * i, seed=100 + i, temperature=0 if i % 2 else 1.0,
                   extra_body={**extra, "ignore_eos": True}) for i, p in enumerate(prompts)]
    one = start_server(model_dir(model), "--max-batch", "1")
    alone = client(one)
    want = [alone.completions.create(**b).choices[0].text for b in bodies]
    s = start_server(model_dir(model), "--max-batch", "8")
    c = client(s)
    alone_steps = one.metrics("muninn_scheduler_steps_total")
    # On a loaded machine the clients may happen to send one after another, so that no step is
    # shared; every round must give the lone answers, and one of three rounds must share steps.
    shared = False
    for round in range(3):
        steps_before = s.metrics("muninn_scheduler_steps_total")
        with ThreadPoolExecutor(len(bodies)) as pool:
            got = list(pool.map(lambda b: c.completions.create(**b).choices[0].text, bodies))
        assert got == want, f"round {round}"
        assert s.metrics("muninn_generated_tokens_total") == (round + 1) * sum(30 + 4 * i for i in range(8))
        if s.metrics("muninn_scheduler_steps_total") - steps_before < alone_steps:
            shared = True
            break
    assert shared, "no round of concurrent requests shared a scheduler step"
